#!/usr/bin/env python3
"""Conversion benchmark: WebDataset shards -> MDS with `shardsmith pack` against the
obvious Python conversion, and `shardsmith cat` of one sample of a 1,000-shard dataset.
Not a test: nothing asserts a time.

usage: tests/bench/run.sh convert [--samples 30000] [--repeat 3] [--cat-shards 1000]
       (runs in the interop venv)

  input        the benchmark corpus (make_corpus.py: jpg, json, txt per sample) written
               as WebDataset shards by webdataset.ShardWriter (64 MiB), once per run
  shardsmith   pack SHARDS OUT --format mds --hashes sha1 --shard-size 64MiB --quiet: the
               whole process (start-up, tar walk, shard writing, fsync, manifest)
  python       webdataset.WebDataset(urls, shardshuffle=False) (no decoding) feeding
               streaming.MDSWriter(size_limit=64 MiB, hashes=["sha1"]), the fields
               handed over as raw bytes (reference.py wds2mds); import excluded
Both outputs are compared shard by shard before any figure is printed (MDS shards are
byte-identical when the samples and options are). Warm page cache; runs alternate; best
of K.

  cat          the corpus packed into --cat-shards WebDataset shards; `shardsmith cat DIR
               KEY jpg -v` of a sample in the middle: the bytes it read (from its -v
               report) against the dataset's size, and its time.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release", "shardsmith")
sys.path.insert(0, HERE)
from bench import best, du, timed  # noqa: E402


def corpus(cache, n, python):
    path = os.path.join(cache, f"corpus-v2-{n}")
    if not os.path.exists(path + ".complete"):
        print(f"generating {n} samples in {path} (once; cached)", file=sys.stderr)
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run([python, os.path.join(HERE, "make_corpus.py"), path, str(n)], check=True)
        open(path + ".complete", "w").close()
    return path


def digests(root):
    """{file name: sha256} of an MDS output (index.json and shards)."""
    out = {}
    for name in sorted(os.listdir(root)):
        if name == "index.json" or ".mds" in name:
            with open(os.path.join(root, name), "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def same_samples(ours, theirs, env, python):
    """Every sample of both MDS datasets, in order, compared field by field."""
    script = f"""
import sys, streaming_shim
LocalDataset = streaming_shim.load().LocalDataset
a, b = LocalDataset({ours!r}), LocalDataset({theirs!r})
assert len(a) == len(b), (len(a), len(b))
for i in range(len(a)):
    x, y = a[i], b[i]
    assert x == y, (i, x.get("key"), y.get("key"))
print(len(a))
"""
    out = subprocess.run([python, "-c", script], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"the two MDS outputs differ:\n{out.stderr}")
    return int(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cat-shards", type=int, default=1000)
    ap.add_argument("--work", default=os.path.join(REPO, "target", "bench-convert"))
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    python = sys.executable
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "tests", "interop", "torchstub"),
                                                        os.path.join(REPO, "tests", "interop")]))
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    raw = corpus(args.corpus_cache, args.samples, python)

    shards = os.path.join(work, "wds")
    subprocess.run([python, os.path.join(HERE, "reference.py"), "wds", raw, shards], check=True,
                   stdout=subprocess.DEVNULL)
    size = du(shards)
    subprocess.run(["tar", "cf", "/dev/null", "-C", shards, "."], check=True)  # warm the page cache
    print(f"input: {args.samples} samples in {len(os.listdir(shards))} ShardWriter shards, {size / 1e6:.0f} MB; "
          f"{os.cpu_count()} cores; best of {args.repeat}", file=sys.stderr)

    def fresh(name):
        path = os.path.join(work, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    ours_runs, theirs_runs = [], []
    for _ in range(args.repeat):
        ours_runs.append(timed([BIN, "pack", shards, fresh("ours"), "--format", "mds", "--hashes", "sha1",
                                "--shard-size", "64MiB", "--quiet"]))
        out = fresh("theirs")
        _, rss, stdout = timed([python, os.path.join(HERE, "reference.py"), "wds2mds", shards, out], env=env)
        theirs_runs.append((json.loads(stdout)["seconds"], rss, stdout))
    ours = min(ours_runs, key=lambda r: r[0])
    theirs = min(theirs_runs, key=lambda r: r[0])
    a, b = digests(os.path.join(work, "ours")), digests(os.path.join(work, "theirs"))
    identical = a == b
    checked = None if identical else same_samples(os.path.join(work, "ours"), os.path.join(work, "theirs"), env, python)

    # cat: one sample of a dataset of many shards.
    many = os.path.join(work, "many")
    one = os.path.join(work, "one")
    subprocess.run([BIN, "pack", raw, one, "--format", "webdataset", "--shard-size", "4GiB", "--quiet"], check=True)
    shard_size = max(64 << 10, du(one) // args.cat_shards + 1)
    shutil.rmtree(one)
    subprocess.run([BIN, "pack", raw, many, "--format", "webdataset", "--shard-size", str(shard_size), "--quiet"],
                   check=True)
    tars = sorted(f for f in os.listdir(many) if f.endswith(".tar"))
    many_size = sum(os.path.getsize(os.path.join(many, t)) for t in tars)
    keys = sorted(
        f"{d}/{os.path.splitext(f)[0]}" for d in os.listdir(raw) if os.path.isdir(os.path.join(raw, d))
        for f in os.listdir(os.path.join(raw, d)) if f.endswith(".jpg"))
    key = keys[len(keys) // 2]
    cat = subprocess.run([BIN, "cat", many, key, "jpg", "-v"], capture_output=True)
    if cat.returncode != 0:
        sys.exit(f"shardsmith cat failed: {cat.stderr.decode()}")
    with open(os.path.join(raw, key + ".jpg"), "rb") as f:
        if f.read() != cat.stdout:
            sys.exit(f"shardsmith cat {key} jpg: not the original file's bytes")
    read = re.search(r"(\d+) bytes read", cat.stderr.decode())
    cat_time = best(args.repeat, lambda: timed([BIN, "cat", many, key, "jpg"]))

    lines = [
        f"{'work':<40}{'seconds':>9}{'peak RSS':>11}",
        f"{'shardsmith pack wds -> mds':<40}{ours[0]:>9.2f}{ours[1]:>8.0f} MiB",
        f"{'webdataset -> streaming.MDSWriter':<40}{theirs[0]:>9.2f}{theirs[1]:>8.0f} MiB",
        "",
        f"wds -> mds vs Python: {theirs[0] / ours[0]:5.1f}x faster (target >= 5x); "
        f"{size / ours[0] / 1e6:.0f} MB/s; outputs "
        + ("byte-identical" if identical else f"differ in bytes, same {checked} samples"),
        f"cat of `{key}` from {len(tars)} shards ({many_size / 1e6:.0f} MB): "
        + (f"{int(read.group(1))} bytes read ({int(read.group(1)) / many_size * 100:.2f}% of the dataset)"
           if read else "bytes read not reported")
        + f", {cat_time[0] * 1000:.0f} ms",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
