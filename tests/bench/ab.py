#!/usr/bin/env python3
"""Times two shardsmith binaries against each other on the same inputs: what a
refactoring must leave unchanged. Runs alternate (A B, B A, ...) so that drift of the
machine falls on both; prints the median of each and B/A.

usage: tests/bench/ab.py OLD_BINARY NEW_BINARY [--repeat 7] [--dir DIR]

The corpus (20,000 samples of 1-40 KB with a JSON label each; 100 MB of JSONL) is made
once with a fixed seed in DIR (default ~/.cache/shardsmith/bench-ab). Build the old
binary from another checkout, e.g. `git worktree add ../old REV && cargo build
--release --manifest-path ../old/Cargo.toml`, then pass `../old/target/release/shardsmith`.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import time


def corpus(root):
    raw, text = os.path.join(root, "raw"), os.path.join(root, "text.jsonl")
    if not os.path.exists(os.path.join(root, ".complete")):
        shutil.rmtree(root, ignore_errors=True)
        rng = random.Random(1)
        for i in range(20000):
            folder = os.path.join(raw, f"c{i % 50}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"{i:06}.bin"), "wb") as f:
                f.write(rng.randbytes(rng.randint(1000, 40000)))
            with open(os.path.join(folder, f"{i:06}.json"), "w") as f:
                json.dump({"i": i, "label": i % 50}, f)
        letters = "abcdefghijklmnopqrstuvwxyz"
        words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(5000)]
        with open(text, "w") as f:
            size = 0
            while size < 100 << 20:
                doc = " ".join(rng.choice(words) for _ in range(rng.randint(50, 400)))
                line = json.dumps({"text": doc}) + "\n"
                f.write(line)
                size += len(line)
        open(os.path.join(root, ".complete"), "w").close()
    return raw, text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--dir", default=os.path.expanduser("~/.cache/shardsmith/bench-ab"))
    args = ap.parse_args()
    raw, text = corpus(args.dir)
    out = os.path.join(args.dir, "out")
    shards = os.path.join(args.dir, "shards")
    subprocess.run([args.new, "pack", raw, shards, "-q", "--force"], check=True)
    jobs = {
        "pack webdataset": ["pack", raw, out],
        "pack mds": ["pack", raw, out, "--format", "mds"],
        "pack parquet": ["pack", raw, out, "--format", "parquet"],
        "tokenize gpt2": ["tokenize", text, out, "--tokenizer", "gpt2"],
        "verify": ["verify", shards],
    }
    for name, argv in jobs.items():
        times = {args.old: [], args.new: []}
        for r in range(args.repeat):
            for binary in (args.old, args.new) if r % 2 == 0 else (args.new, args.old):
                shutil.rmtree(out, ignore_errors=True)
                start = time.perf_counter()
                subprocess.run([binary, *argv, "-q"], check=True, stdout=subprocess.DEVNULL)
                times[binary].append(time.perf_counter() - start)
        a, b = statistics.median(times[args.old]), statistics.median(times[args.new])
        print(f"{name:16} old {a:6.2f} s  new {b:6.2f} s  new/old {b / a:5.3f}", flush=True)
    shutil.rmtree(out, ignore_errors=True)


main()
