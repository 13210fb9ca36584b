#!/usr/bin/env python3
"""shardsmith benchmark: the same work done by shardsmith and by the reference tools,
side by side in one run, reported as ratios. Not a test: nothing here asserts a time.

usage: tests/bench/run.sh [--samples N] [--text-mb MB] [--repeat K] [--what pack,tokenize]
       (builds, sets up, then runs this)

Work measured (warm page cache; best of K runs each):
  pack      shardsmith pack --format webdataset --shard-size 64MiB (manifest included)
            vs webdataset.ShardWriter (64 MiB) and GNU `tar cf` of the same files
  mds       shardsmith pack --format mds (sha1, 64 MiB) vs streaming.MDSWriter and tar cf
  parquet   shardsmith pack --format parquet (snappy, 4096-row groups) vs pyarrow; file sizes
  hash      shardsmith manifest / verify of the shards vs sha256sum and Python hashlib
  memory    peak RSS of pack on the whole corpus and on a hard-linked third of it
            (median of runs; per-file growth)
  tokenize  shardsmith tokenize --format nanogpt --shard-tokens none (whole process:
            start-up, tokenizer load, fsync and manifest included) vs Python tiktoken
            encode_ordinary_batch on every core writing the same uint16 file (import
            excluded), on a JSONL corpus of real text from the machine
            (make_text_corpus.py), for r50k_base (GPT-2) and cl100k_base; runs alternate
            so load from other processes hits both; the two files must be identical;
            peak RSS on the whole corpus and on a third of it
"""
import filecmp
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def timed(cmd, env=None, **kwargs):
    """Runs cmd; returns (wall seconds, peak RSS in MiB, stdout). Dirty pages of the
    previous run are flushed first, so one tool's writeback does not slow the next."""
    os.sync()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"command failed ({code}): {' '.join(cmd)}\n{err.decode()}")
    return seconds, usage.ru_maxrss / 1024, out


def best(runs, fn):
    results = [fn() for _ in range(runs)]
    return min(results, key=lambda r: r[0])


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--text-mb", type=int, default=200)
    ap.add_argument("--what", default="pack,tokenize")
    ap.add_argument("--work", default=os.path.join(REPO, "target", "bench"))
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    bin_ = os.path.join(REPO, "target", "release", "shardsmith")
    python = sys.executable
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    if "tokenize" in args.what:
        tokenize_bench(args, bin_, python, work)
    if "pack" not in args.what:
        return
    corpus = os.path.join(args.corpus_cache, f"corpus-v2-{args.samples}")
    marker = corpus + ".complete"
    if not os.path.exists(marker):
        print(f"generating {args.samples} samples in {corpus} (once; cached)", file=sys.stderr)
        shutil.rmtree(corpus, ignore_errors=True)
        subprocess.run([python, os.path.join(HERE, "make_corpus.py"), corpus, str(args.samples)], check=True)
        open(marker, "w").close()
    files = sum(len(f) for _, _, f in os.walk(corpus))
    payload = du(corpus)
    # Warm the page cache.
    subprocess.run(["tar", "cf", "/dev/null", "-C", corpus, "."], check=True)
    print(f"corpus: {args.samples} samples, {files} files, {payload / 1e6:.0f} MB; {os.cpu_count()} cores; best of {args.repeat}",
          file=sys.stderr)
    results = {}

    def fresh(name):
        path = os.path.join(work, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    results["tar_cf"] = best(args.repeat, lambda: timed(
        ["tar", "cf", fresh("corpus.tar"), "-C", corpus, "."]))
    shards = os.path.join(work, "shards")
    results["pack"] = best(args.repeat, lambda: timed(
        [bin_, "pack", corpus, fresh("shards"), "--format", "webdataset", "--shard-size", "64MiB", "--quiet"]))
    def reference_wds():
        out = fresh("ref")
        seconds, rss, stdout = timed([python, os.path.join(HERE, "reference.py"), "wds", corpus, out])
        return json.loads(stdout)["seconds"], rss, stdout
    results["webdataset_shardwriter"] = best(args.repeat, reference_wds)

    def reference(tool):
        def run():
            out = fresh(f"ref-{tool}")
            seconds, rss, stdout = timed([python, os.path.join(HERE, "reference.py"), tool, corpus, out], env=env)
            return json.loads(stdout)["seconds"], rss, stdout
        return run

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "tests", "interop", "torchstub"),
                                                        os.path.join(REPO, "tests", "interop")]))
    results["pack_mds"] = best(args.repeat, lambda: timed(
        [bin_, "pack", corpus, fresh("mds"), "--format", "mds", "--hashes", "sha1", "--shard-size", "64MiB", "--quiet"]))
    results["streaming_mdswriter"] = best(args.repeat, reference("mds"))
    results["streaming_mdswriter_bytes"] = best(args.repeat, reference("mds-bytes"))
    results["pack_parquet"] = best(args.repeat, lambda: timed(
        [bin_, "pack", corpus, fresh("parquet"), "--format", "parquet", "--compression", "snappy",
         "--row-group-size", "4096", "--shard-size", "64MiB", "--quiet"]))
    results["pyarrow_parquet"] = best(args.repeat, reference("parquet"))
    parquet_ours = sum(os.path.getsize(os.path.join(work, "parquet", f)) for f in os.listdir(os.path.join(work, "parquet")) if f.endswith(".parquet"))
    parquet_ref = du(os.path.join(work, "ref-parquet"))

    tars = sorted(os.path.join(shards, f) for f in os.listdir(shards) if f.endswith(".tar"))
    shard_bytes = sum(os.path.getsize(t) for t in tars)
    subprocess.run(["cat", *tars], stdout=subprocess.DEVNULL, check=True)
    results["manifest"] = best(args.repeat, lambda: timed(
        [bin_, "manifest", shards, "--output", os.path.join(work, "m.json"), "--force", "--quiet"]))
    results["verify"] = best(args.repeat, lambda: timed([bin_, "verify", shards, "--quiet"]))
    results["sha256sum"] = best(args.repeat, lambda: timed(["sha256sum", *tars]))
    def hashlib_sha():
        seconds, rss, stdout = timed([python, os.path.join(HERE, "reference.py"), "sha256", *tars])
        return json.loads(stdout)["seconds"], rss, stdout
    results["python_hashlib"] = best(args.repeat, hashlib_sha)

    # Memory: the whole corpus vs a third of it. The third is a tree of hard links to the
    # first 34 class folders, so both runs take the same code path (a --files-from run
    # would add the list's own structures), with the same flags. Peak RSS moves by a few
    # MiB from run to run (allocator timing), so each side is the median of its runs.
    third = corpus + "-third"  # beside the corpus: hard links need one file system
    if not os.path.exists(third + ".complete"):
        shutil.rmtree(third, ignore_errors=True)
        os.makedirs(third)
        for d in sorted(os.listdir(corpus))[:34]:
            subprocess.run(["cp", "-al", os.path.join(corpus, d), third], check=True)
        open(third + ".complete", "w").close()
    third_files = sum(len(f) for _, _, f in os.walk(third))

    def median_rss(root, name):
        runs = [timed([bin_, "pack", root, fresh(name), "--shard-size", "64MiB", "--quiet"])[1]
                for _ in range(max(3, args.repeat))]
        return sorted(runs)[len(runs) // 2]

    whole_rss = median_rss(corpus, "rss-whole")
    third_rss = median_rss(third, "rss-third")
    small = (None, third_rss)
    pack_s = results["pack"][0]

    lines = [
        f"{'work':<34}{'seconds':>9}{'peak RSS':>11}",
        *(f"{name:<34}{r[0]:>9.2f}{r[1]:>8.0f} MiB" for name, r in results.items()),
        "",
        f"pack vs webdataset.ShardWriter: {results['webdataset_shardwriter'][0] / pack_s:5.1f}x faster (target >= 8x)",
        f"pack vs tar cf (floor):         {pack_s / results['tar_cf'][0]:5.2f}x the time of tar (target <= 1.5x)",
        f"mds vs streaming.MDSWriter:     {results['streaming_mdswriter'][0] / results['pack_mds'][0]:5.1f}x faster (target >= 3x; decoded JSON/text, as anchors.py)",
        f"mds vs MDSWriter fed raw bytes: {results['streaming_mdswriter_bytes'][0] / results['pack_mds'][0]:5.1f}x faster (less work for Python than the anchor)",
        f"mds vs tar cf:                  {results['pack_mds'][0] / results['tar_cf'][0]:5.2f}x the time of tar (target <= 1.5x)",
        f"parquet vs pyarrow:             {results['pack_parquet'][0] / results['pyarrow_parquet'][0]:5.2f}x the time of pyarrow (target <= 1.0)",
        f"parquet size vs pyarrow:        {parquet_ours / parquet_ref:5.3f}x ({parquet_ours / 1e6:.1f} MB vs {parquet_ref / 1e6:.1f} MB; target <= 1.0)",
        f"manifest throughput:            {shard_bytes / results['manifest'][0] / 1e9:5.2f} GB/s (target >= 1.5 GB/s)",
        f"verify throughput:              {shard_bytes / results['verify'][0] / 1e9:5.2f} GB/s (deep tar walk + SHA-256)",
        f"manifest vs sha256sum:          {results['sha256sum'][0] / results['manifest'][0]:5.1f}x faster",
        f"manifest vs Python hashlib:     {results['python_hashlib'][0] / results['manifest'][0]:5.1f}x faster",
        f"pack peak RSS:                  {whole_rss:5.0f} MiB for {files} files (median; target < 300 MiB)",
        f"RSS growth per input file:      {(whole_rss - small[1]) * 1048576 / max(1, files - third_files):5.0f} bytes "
        f"({third_files} files: {small[1]:.0f} MiB; target < 200 bytes)",
    ]
    print("\n".join(lines))
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump({k: {"seconds": v[0], "peak_rss_mib": v[1]} for k, v in results.items()}, f, indent=2)


def rank_files():
    """The .tiktoken rank files the tiktoken-rs crate ships (found through cargo). Only the
    host's packages are resolved: offline, cargo cannot resolve another platform's crates,
    which a machine that only built shardsmith has never downloaded."""
    host = next(line.split(": ", 1)[1] for line in subprocess.run(
        ["rustc", "-vV"], check=True, capture_output=True, text=True).stdout.splitlines()
        if line.startswith("host: "))
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--offline",
                                      "--filter-platform", host],
                                     cwd=REPO, check=True, capture_output=True).stdout)
    manifest = next(p["manifest_path"] for p in meta["packages"] if p["name"] == "tiktoken-rs")
    assets = os.path.join(os.path.dirname(manifest), "assets")
    return sorted(os.path.join(assets, f) for f in os.listdir(assets) if f.endswith(".tiktoken"))


def tokenize_bench(args, bin_, python, work):
    os.makedirs(args.corpus_cache, exist_ok=True)
    corpus = os.path.join(args.corpus_cache, f"text-v1-{args.text_mb}.jsonl")
    if not os.path.exists(corpus + ".complete"):
        print(f"generating {args.text_mb} MB of JSONL text in {corpus} (once; cached)", file=sys.stderr)
        subprocess.run([python, os.path.join(HERE, "make_text_corpus.py"), corpus, str(args.text_mb)], check=True)
        open(corpus + ".complete", "w").close()
    # Streamed, not held: the children's peak RSS must not include this process's pages.
    with open(corpus, "rb") as f:
        documents = sum(1 for _ in f)
    third = os.path.join(work, "text-third.jsonl")
    with open(corpus, "rb") as f, open(third, "wb") as out:
        for i, line in enumerate(f):
            if i >= documents // 3:
                break
            out.write(line)
    size = os.path.getsize(corpus)
    cache = os.path.join(work, "tiktoken-cache")
    subprocess.run([python, os.path.join(HERE, "reference.py"), "tiktoken-cache", cache, *rank_files()],
                   check=True, capture_output=True)
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=cache, HTTP_PROXY="http://127.0.0.1:9",
               HTTPS_PROXY="http://127.0.0.1:9")
    print(f"text corpus: {documents} documents, {size / 1e6:.0f} MB; {os.cpu_count()} cores; best of {args.repeat}",
          file=sys.stderr)
    rows, lines_out = [], []
    for encoding in ("r50k_base", "cl100k_base"):
        ours_runs, ref_runs = [], []
        out = os.path.join(work, f"tok-{encoding}")
        ref = os.path.join(work, f"ref-{encoding}.bin")
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            ours_runs.append(timed([bin_, "tokenize", corpus, out, "-t", encoding, "--format", "nanogpt",
                                    "--shard-tokens", "none", "--quiet"]))
            seconds, rss, stdout = timed([python, os.path.join(HERE, "reference.py"), "tokenize", corpus, ref,
                                          encoding], env=env)
            ref_runs.append((json.loads(stdout)["seconds"], rss, stdout))
        ours, theirs = min(ours_runs), min(ref_runs)
        same = filecmp.cmp(os.path.join(out, "tokens_000000.bin"), ref, shallow=False)
        rows += [(f"tokenize {encoding} (shardsmith)", ours), (f"tokenize {encoding} (tiktoken)", theirs)]
        lines_out.append(f"tokenize {encoding:<12} vs tiktoken: {theirs[0] / ours[0]:5.1f}x faster "
                         f"({size / ours[0] / 1e6:.0f} vs {size / theirs[0] / 1e6:.1f} MB/s; target >= 8x); "
                         f"outputs {'IDENTICAL' if same else 'DIFFER'}")
        if not same:
            lines_out.append(f"  ERROR: {out}/tokens_000000.bin and {ref} differ")
    small = timed([bin_, "tokenize", third, os.path.join(work, "tok-third"), "-t", "r50k_base", "--format",
                   "nanogpt", "--shard-tokens", "none", "--quiet"])
    full = rows[0][1]
    lines_out.append(f"tokenize peak RSS (r50k_base):   {full[1]:.0f} MiB on {size / 1e6:.0f} MB, "
                     f"{small[1]:.0f} MiB on a third (target < 1024 MiB, flat)")
    print("\n".join([f"{'work':<34}{'seconds':>9}{'peak RSS':>11}",
                     *(f"{name:<34}{r[0]:>9.2f}{r[1]:>8.0f} MiB" for name, r in rows), "", *lines_out, ""]))
    with open(os.path.join(work, "tokenize-results.json"), "w") as f:
        json.dump({k: {"seconds": v[0], "peak_rss_mib": v[1]} for k, v in rows}, f, indent=2)


if __name__ == "__main__":
    main()
