#!/usr/bin/env python3
"""Formats benchmark (issue 34): the corpus to `--format hf` and `--format litdata`
against the libraries' own writers, and what `--dedup` costs, side by side in one run.
Not a test: nothing here asserts a time.

usage: tests/bench/run.sh formats [--samples 30000] [--repeat 3] [--shard-size 64MiB]
                                  [--json FILE] [--work DIR]
       (builds, sets up the torch env, which has datasets and litdata, and runs this
       with its Python)

Work measured (page cache warm; outputs under --work, deleted before each run; rounds
interleaved, the order rotating every round, after one untimed pack; best of K):
  hf        `pack --format hf --shard-size S` against formats_ref.py hf:
            datasets.Dataset.from_generator(...).save_to_disk(max_shard_size=S)
  litdata   `pack --format litdata --shard-size S` against formats_ref.py litdata:
            litdata.optimize(num_workers=nproc, chunk_bytes=S)
  dedup     `pack --dedup` against the same `pack` (WebDataset)
The references' times exclude their imports (formats_ref.py prints the seconds of the
work alone); their CPU and memory include everything. Each row gives the best wall time,
the median, the CPU seconds and the peak PSS of the whole process tree (litdata forks
workers). After the first run, each output is read back: datasets.load_from_disk's and
litdata.StreamingDataset's row counts must equal the corpus's samples.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from indexes import BIN, corpus_dir, summary, timed  # noqa: E402

SIZES = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_size(text):
    for unit, factor in SIZES.items():
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    return int(text)


def ref_run(kind, corpus, out, work, chunk):
    """formats_ref.py, timed as a whole for CPU and memory; its own seconds as wall."""
    # from_generator caches its dataset by the generator's fingerprint: a second run
    # would only copy the cached Arrow file.
    shutil.rmtree(os.path.join(work, "hf-cache"), ignore_errors=True)
    cmd = [sys.executable, os.path.join(HERE, "formats_ref.py"), kind, corpus, out, work, str(chunk),
           str(os.cpu_count())]
    result = timed(cmd, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    with open(os.path.join(work, f"{kind}-seconds")) as f:
        result["seconds"] = float(f.read())
    return result


def rows_of(kind, out):
    if kind == "hf":
        import datasets

        return datasets.load_from_disk(out).num_rows
    import litdata

    return len(litdata.StreamingDataset(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shard-size", default="64MiB")
    ap.add_argument("--json")
    ap.add_argument("--work", default=os.path.join(os.path.expanduser("~"), ".cache", "shardsmith", "bench-work"))
    ap.add_argument("--corpus-cache", default=os.path.join(os.path.expanduser("~"), ".cache", "shardsmith", "bench"))
    args = ap.parse_args()
    corpus = corpus_dir(args, sys.executable)
    work = os.path.join(args.work, "formats")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    chunk = parse_size(args.shard_size)
    out = os.path.join(work, "out")

    def ours(*extra):
        return lambda: timed([BIN, "pack", corpus, out, "--shard-size", args.shard_size, "--quiet", *extra])

    variants = {
        "pack --format hf": ours("--format", "hf"),
        "datasets from_generator + save_to_disk": lambda: ref_run("hf", corpus, out, work, chunk),
        "pack --format litdata": ours("--format", "litdata"),
        "litdata.optimize": lambda: ref_run("litdata", corpus, out, work, chunk),
        "pack": ours(),
        "pack --dedup": ours("--dedup"),
    }
    subprocess.run([BIN, "pack", corpus, out, "--quiet"], check=True)
    runs = {name: [] for name in variants}
    checked = {}
    names = list(variants)
    for round_ in range(args.repeat):
        order = names[round_ % len(names):] + names[: round_ % len(names)]
        for name in order:
            shutil.rmtree(out, ignore_errors=True)
            runs[name].append(variants[name]())
            print(f"  round {round_ + 1}: {name}: {runs[name][-1]['seconds']:.2f} s", file=sys.stderr)
            kind = "hf" if "hf" in name or "datasets" in name else "litdata" if "litdata" in name else None
            if kind and name not in checked:
                checked[name] = rows_of(kind, out)
    shutil.rmtree(out, ignore_errors=True)
    results = {name: summary(r) for name, r in runs.items()}
    print(f"\n{args.samples} samples, --shard-size {args.shard_size}, {os.cpu_count()} cores, best of {args.repeat}")
    print(f"{'work':42s} {'best s':>8s} {'median s':>9s} {'CPU s':>7s} {'PSS MiB':>8s}  rows read back")
    for name, r in results.items():
        print(f"{name:42s} {r['seconds']:8.2f} {r['median_seconds']:9.2f} {r['cpu_seconds']:7.2f} "
              f"{r['tree_pss_mib']:8.0f}  {checked.get(name, '')}")
    ratio = {
        "hf": results["datasets from_generator + save_to_disk"]["seconds"] / results["pack --format hf"]["seconds"],
        "litdata": results["litdata.optimize"]["seconds"] / results["pack --format litdata"]["seconds"],
        "dedup": results["pack --dedup"]["seconds"] / results["pack"]["seconds"],
        "dedup_cpu": results["pack --dedup"]["cpu_seconds"] / results["pack"]["cpu_seconds"],
    }
    print(f"\nhf: {ratio['hf']:.1f}x faster than save_to_disk; litdata: {ratio['litdata']:.1f}x faster than "
          f"optimize; --dedup: {ratio['dedup']:.3f}x the time of pack ({ratio['dedup_cpu']:.3f}x its CPU)")
    bad = {name: rows for name, rows in checked.items() if rows != args.samples}
    if bad:
        sys.exit(f"rows read back differ from {args.samples}: {bad}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": args.samples, "results": results, "ratios": ratio, "rows": checked}, f, indent=2)


if __name__ == "__main__":
    main()
