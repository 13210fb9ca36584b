#!/usr/bin/env python3
"""Readers' indexes benchmark (issue 33): what the indexes cost inside `pack`, and
`shardsmith index` against the readers' own indexers, side by side in one run. Not a
test: nothing here asserts a time.

usage: tests/bench/run.sh indexes [--samples 30000] [--repeat 3] [--shard-size 64MiB]
                                  [--json FILE] [--work DIR]
       (builds, sets up the interop and torch envs, then runs this with the interop
       env's Python; --torch-venv is passed by run.sh)

Work measured (page cache warm; every output on the same disk, under --work):
  pack      `pack --format webdataset --shard-size S --index all` against the same `pack`
            without --index, rounds interleaved (the order flips every round) after one
            untimed pack, best of K
  index     on the shards of a plain `pack` of the corpus: `shardsmith index --for all`,
            and --for wids / dali / energon alone, against
              widsindex create  over every shard (webdataset's wids; the interop env)
              wds2idx           over every shard, one process after the other as users run
                                it, and through `xargs -P $(nproc)` (DALI; LC_ALL=C.UTF-8)
              energon prepare   default workers (16) and --num-workers $(nproc)
                                (megatron-energon; CrudeWebdataset, split 1,0,0)
            every command once per round, rotated, the outputs deleted before each run
            (and the manifest restored: `index` lists what it writes in it); best of K
Each row gives the best wall time, the median, the CPU seconds (user + system of the
process and its children) of the best run, the peak RSS of the largest single process
(wait4) and the peak PSS of all its processes together (sampled every 10 ms for 0.1 s,
then every 50 ms; PSS splits each shared page among its sharers, so forked workers are
not counted N times). After the first run of each reference its output is compared
with shardsmith's: wids-index.json without md5sum, every DALI .idx, every .tar.idx and
the .nv-meta JSON/YAML files byte for byte
(index.sqlite's row order depends on energon's workers, so it is not compared here;
tests/interop/check_energon_index.py does with one worker).
"""
import argparse
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release", "shardsmith")


def tree_pss(pid):
    """Proportional set size (bytes) of pid and all its descendants now: resident pages,
    each shared page split among the processes sharing it, so forked workers are not
    counted once per worker (0 once the process is gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, StopIteration, ValueError):
            pass
    return total


def timed(cmd, cwd=None, env=None):
    """Runs cmd; returns a dict: wall seconds, CPU seconds (user + system, children
    included), peak RSS of the largest process (MiB, wait4) and peak PSS of the whole
    process tree (MiB, sampled every 10 ms, then every 50 ms). Dirty pages of the
    previous run are flushed first (as bench.py)."""
    os.sync()
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=null, stderr=subprocess.PIPE)
        peak, done = [0], threading.Event()

        def sample():
            # Every 10 ms for the first 0.1 s (short runs get a sample too), then 50 ms.
            ticks = 0
            while not done.wait(0.01 if ticks < 10 else 0.05):
                ticks += 1
                peak[0] = max(peak[0], tree_pss(proc.pid))

        sampler = threading.Thread(target=sample)
        sampler.start()
        err = proc.stderr.read()  # stderr is small; reading it keeps the pipe from filling
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"command failed ({code}): {' '.join(cmd)}\n{err.decode()[-3000:]}")
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024, "tree_pss_mib": peak[0] / 1048576}


def summary(runs):
    """The best run (its CPU time and RSS), with the median wall time of all runs."""
    best = min(runs, key=lambda r: r["seconds"])
    times = sorted(r["seconds"] for r in runs)
    return dict(best, median_seconds=times[len(times) // 2], runs=[r["seconds"] for r in runs])


def corpus_dir(args, python):
    """The benchmark corpus, made once and cached as bench.py caches it. objects.py makes
    the same corpus without the marker: a folder holding all 3 x N files is taken as done."""
    corpus = os.path.join(args.corpus_cache, f"corpus-v2-{args.samples}")
    marker = corpus + ".complete"
    if not os.path.exists(marker):
        files = sum(len(f) for _, _, f in os.walk(corpus)) if os.path.isdir(corpus) else 0
        if files != 3 * args.samples:
            print(f"generating {args.samples} samples in {corpus} (once; cached)", file=sys.stderr)
            shutil.rmtree(corpus, ignore_errors=True)
            os.makedirs(args.corpus_cache, exist_ok=True)
            subprocess.run([python, os.path.join(HERE, "make_corpus.py"), corpus, str(args.samples)], check=True)
        open(marker, "w").close()
    return corpus


def pack_bench(args, corpus, work):
    """pack with and without --index all, interleaved; returns {name: summary}."""
    base = [BIN, "pack", corpus, None, "--format", "webdataset", "--shard-size", args.shard_size, "--quiet"]
    variants = {"pack": [], "pack --index all": ["--index", "all"]}
    runs = {name: [] for name in variants}
    # One untimed run first: the first pack after the corpus was read takes 3-5 times as
    # long on this machine (page cache and writeback settling), whichever variant it is.
    out = os.path.join(work, "pack-out")
    subprocess.run(base[:3] + [out] + base[4:], check=True)
    for round_ in range(args.repeat):
        order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in order:
            out = os.path.join(work, "pack-out")
            shutil.rmtree(out, ignore_errors=True)
            cmd = list(base)
            cmd[3] = out
            runs[name].append(timed(cmd + variants[name]))
            print(f"  round {round_ + 1}: {name}: {runs[name][-1]['seconds']:.2f} s", file=sys.stderr)
    shutil.rmtree(os.path.join(work, "pack-out"), ignore_errors=True)
    return {name: summary(r) for name, r in runs.items()}


OUTPUTS = ("wids-index.json", "widsindex.json", "dali", ".nv-meta")


def reset(shards, pristine):
    """Deletes every index written in shards and restores the manifest and SHA256SUMS."""
    for name in OUTPUTS:
        path = os.path.join(shards, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    for path in glob.glob(os.path.join(shards, "*.tar.idx")):
        os.remove(path)
    for name in os.listdir(pristine):
        shutil.copyfile(os.path.join(pristine, name), os.path.join(shards, name))


def compare(kind, shards, ours):
    """Whether the reference output now in shards equals shardsmith's (saved in ours)."""
    if kind == "wids":
        with open(os.path.join(shards, "widsindex.json")) as f:
            theirs = json.load(f)
        for entry in theirs["shardlist"]:
            entry.pop("md5sum", None)
        with open(os.path.join(ours, "wids-index.json")) as f:
            return theirs == json.load(f)
    if kind == "dali":
        names = sorted(os.listdir(os.path.join(ours, "dali")))
        return names == sorted(os.listdir(os.path.join(shards, "dali"))) and all(
            filecmp.cmp(os.path.join(ours, "dali", n), os.path.join(shards, "dali", n), shallow=False) for n in names)
    names = sorted(n for n in os.listdir(ours) if n.endswith(".tar.idx"))
    meta = (".info.json", "split.yaml", "dataset.yaml")
    return (names == sorted(os.path.basename(p) for p in glob.glob(os.path.join(shards, "*.tar.idx")))
            and all(filecmp.cmp(os.path.join(ours, n), os.path.join(shards, n), shallow=False) for n in names)
            and all(filecmp.cmp(os.path.join(ours, "nv-meta", n), os.path.join(shards, ".nv-meta", n), shallow=False)
                    for n in meta))


def save_ours(shards, ours):
    shutil.rmtree(ours, ignore_errors=True)
    os.makedirs(os.path.join(ours, "nv-meta"))
    shutil.copyfile(os.path.join(shards, "wids-index.json"), os.path.join(ours, "wids-index.json"))
    shutil.copytree(os.path.join(shards, "dali"), os.path.join(ours, "dali"))
    for path in glob.glob(os.path.join(shards, "*.tar.idx")):
        shutil.copyfile(path, os.path.join(ours, os.path.basename(path)))
    for name in os.listdir(os.path.join(shards, ".nv-meta")):
        shutil.copyfile(os.path.join(shards, ".nv-meta", name), os.path.join(ours, "nv-meta", name))


def index_bench(args, corpus, work):
    """shardsmith index against widsindex, wds2idx and energon prepare on the same shards;
    returns ({name: summary}, {reference: identical?}, shard count, shard bytes)."""
    shards = os.path.join(work, "shards")
    shutil.rmtree(shards, ignore_errors=True)
    subprocess.run([BIN, "pack", corpus, shards, "--format", "webdataset", "--shard-size", args.shard_size,
                    "--quiet"], check=True)
    pristine = os.path.join(work, "pristine")
    shutil.rmtree(pristine, ignore_errors=True)
    os.makedirs(pristine)
    for name in ("manifest.json", "SHA256SUMS"):
        shutil.copyfile(os.path.join(shards, name), os.path.join(pristine, name))
    tars = sorted(os.path.join(shards, n) for n in os.listdir(shards) if n.endswith(".tar"))
    subprocess.run(["cat", *tars], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    names = [os.path.basename(t) for t in tars]
    cores = str(os.cpu_count())
    torch_bin = os.path.join(args.torch_venv, "bin")
    widsindex = os.path.join(os.path.dirname(sys.executable), "widsindex")
    wids_env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tests", "interop", "torchstub"))
    dali_env = dict(os.environ, LC_ALL="C.UTF-8")
    wds2idx = os.path.join(torch_bin, "wds2idx")
    energon = [os.path.join(torch_bin, "energon"), "prepare", "--non-interactive", "--split-ratio", "1,0,0",
               "--sample-type", "CrudeWebdataset", "--no-progress"]
    # (name, command, env, which shardsmith row it is compared with, output kind)
    variants = [
        ("shardsmith index --for all", [BIN, "index", shards, "--for", "all", "--quiet"], None, None, None),
        ("shardsmith index --for wids", [BIN, "index", shards, "--for", "wids", "--quiet"], None, None, None),
        ("shardsmith index --for dali", [BIN, "index", shards, "--for", "dali", "--quiet"], None, None, None),
        ("shardsmith index --for energon", [BIN, "index", shards, "--for", "energon", "--quiet"], None, None, None),
        ("widsindex create", [widsindex, "create", "--name", "", "-o", "widsindex.json", *names], wids_env,
         "shardsmith index --for wids", "wids"),
        ("wds2idx, one shard after another", ["sh", "-c", 'mkdir dali && for s in *.tar; do "$0" "$s" '
                                               '"dali/${s%.tar}.idx" || exit 1; done', wds2idx], dali_env,
         "shardsmith index --for dali", "dali"),
        (f"wds2idx, xargs -P {cores}", ["sh", "-c", f'mkdir dali && ls *.tar | sed "s/[.]tar$//" | '
                                        f'xargs -P {cores} -I@ "$0" @.tar dali/@.idx', wds2idx], dali_env,
         "shardsmith index --for dali", "dali"),
        ("energon prepare (16 workers)", energon + ["."], None, "shardsmith index --for energon", "energon"),
        (f"energon prepare --num-workers {cores}", energon + ["--num-workers", cores, "."], None,
         "shardsmith index --for energon", "energon"),
    ]
    ours = os.path.join(work, "ours")
    reset(shards, pristine)
    subprocess.run([BIN, "index", shards, "--for", "all", "--quiet"], check=True)
    save_ours(shards, ours)
    runs = {v[0]: [] for v in variants}
    identical = {}
    for round_ in range(args.repeat):
        order = variants[round_ % len(variants):] + variants[:round_ % len(variants)]
        for name, cmd, env, _, kind in order:
            reset(shards, pristine)
            runs[name].append(timed(cmd, cwd=shards, env=env))
            print(f"  round {round_ + 1}: {name}: {runs[name][-1]['seconds']:.2f} s", file=sys.stderr)
            if kind and name not in identical:
                identical[name] = compare(kind, shards, ours)
    reset(shards, pristine)
    results = {name: summary(r) for name, r in runs.items()}
    for name, _, _, against, _ in variants:
        if against:
            results[name]["vs"] = against
            results[name]["ratio"] = results[name]["seconds"] / results[against]["seconds"]
            results[name]["ratio_vs_all"] = results[name]["seconds"] / results["shardsmith index --for all"]["seconds"]
            results[name]["identical_output"] = identical[name]
    return results, len(tars), sum(os.path.getsize(t) for t in tars)


def table(pack, index):
    lines = ["| work | seconds (best) | median | CPU s | peak RSS, largest process | peak PSS, all processes "
             "| vs shardsmith |", "| --- | --- | --- | --- | --- | --- | --- |"]

    def row(name, r, note):
        pss = f"{r['tree_pss_mib']:.0f} MiB" if r["tree_pss_mib"] else "(ended before a sample)"
        lines.append(f"| {name} | {r['seconds']:.2f} | {r['median_seconds']:.2f} | {r['cpu_seconds']:.2f} "
                     f"| {r['peak_rss_mib']:.0f} MiB | {pss} | {note} |")

    plain, indexed = pack["pack"], pack["pack --index all"]
    row("`pack`", plain, "")
    row("`pack --index all`", indexed,
        f"{indexed['seconds'] / plain['seconds']:.3f}× the time of `pack` (median {indexed['median_seconds'] / plain['median_seconds']:.3f}×, "
        f"CPU {indexed['cpu_seconds'] / plain['cpu_seconds']:.3f}×)")
    for name, r in index.items():
        if "ratio" in r:
            note = (f"{r['ratio']:.1f}× (`--for {r['vs'].rsplit(' ', 1)[1]}`), {r['ratio_vs_all']:.1f}× (`--for all`); "
                    f"output {'identical' if r['identical_output'] else 'DIFFERS'}")
        else:
            note = ""
        row(f"`{name}`", r, note)
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shard-size", default="64MiB")
    ap.add_argument("--json", help="also write the results as JSON to this file")
    ap.add_argument("--work", default=os.path.join(REPO, "target", "bench-indexes"))
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    ap.add_argument("--torch-venv", required=True, help="tests/interop/setup_env.sh torch (wds2idx, energon)")
    args = ap.parse_args()
    corpus = corpus_dir(args, sys.executable)
    # widsindex copies every shard to /tmp/shard.tar before reading it; ours is removed at the end.
    scratch_existed = os.path.exists("/tmp/shard.tar")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    subprocess.run(["tar", "cf", "/dev/null", "-C", corpus, "."], check=True)  # warm the page cache
    print(f"corpus: {args.samples} samples; {os.cpu_count()} cores; best of {args.repeat}", file=sys.stderr)
    pack = pack_bench(args, corpus, args.work)
    index, shard_count, shard_bytes = index_bench(args, corpus, args.work)
    print(f"{args.samples} samples, {shard_count} shards of {args.shard_size} ({shard_bytes / 1e6:.0f} MB), "
          f"{os.cpu_count()} cores, best of {args.repeat}\n")
    print(table(pack, index))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": args.samples, "shard_size": args.shard_size, "shards": shard_count,
                       "shard_bytes": shard_bytes, "cores": os.cpu_count(), "repeat": args.repeat,
                       "pack": pack, "index": index}, f, indent=2)
    shutil.rmtree(args.work, ignore_errors=True)
    if not scratch_existed and os.path.exists("/tmp/shard.tar"):
        os.remove("/tmp/shard.tar")


if __name__ == "__main__":
    main()
