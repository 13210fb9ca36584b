#!/usr/bin/env python3
"""Cost of splitting a run into tasks, on this machine, in one run, best of K. Not a
test: nothing asserts a time.

  pack      1 process with -j 2   vs  2 tasks with -j 1 each (run at once), then merge
  tokenize  1 process with -j 2   vs  2 tasks with -j 1 each (run at once), then merge

and what each task repeats: listing and planning the whole input, measured as a task
whose share is empty (task 0 of 1,000,000 tasks: it lists, plans, records, writes
nothing), per input file. The text corpus is one JSONL file: the tasks cut it at line
starts. Every split output is compared with the single run (pack:
every byte; tokenize: the token payload) before a figure is printed.

usage: tests/bench/run.sh split [--samples 30000] [--text-mb 100] [--repeat 3]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release", "shardsmith")
ENV = dict(os.environ, SHARDSMITH_NO_PROGRESS="1")


def run(cmd):
    proc = subprocess.run(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def at_once(cmds):
    procs = [subprocess.Popen(c, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds]
    for c, p in zip(cmds, procs):
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(c)}\n{err.decode()[-2000:]}")


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def payload(root):
    return b"".join(b for n, b in sorted(tree(root).items()) if n.endswith(".bin"))


def compare(kind, inp, args, work, repeat, same):
    single = os.path.join(work, f"{kind}-single")
    split = os.path.join(work, f"{kind}-split")

    def one():
        shutil.rmtree(single, ignore_errors=True)
        run([BIN, kind, inp, single, "-j", "2", "-q"] + args)

    merge_time = []

    def two():
        shutil.rmtree(split, ignore_errors=True)
        at_once([[BIN, kind, inp, split, "-j", "1", "-q", "--task-index", str(i), "--task-count", "2"] + args
                 for i in range(2)])
        merge_time.append(timed(lambda: run([BIN, "merge", split, "-q"])))

    empty = os.path.join(work, f"{kind}-empty")

    def list_and_plan():
        shutil.rmtree(empty, ignore_errors=True)
        run([BIN, kind, inp, empty, "-j", "1", "-q", "--task-index", "0", "--task-count", "1000000"] + args)

    t1, t2, tp = [], [], []
    for _ in range(repeat):
        t1.append(timed(one))
        t2.append(timed(two))
        tp.append(timed(list_and_plan))
    if not same(single, split):
        sys.exit(f"{kind}: the split run differs from the single run")
    return min(t1), min(t2), min(merge_time), min(tp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--text-mb", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    os.makedirs(args.corpus_cache, exist_ok=True)
    corpus = os.path.join(args.corpus_cache, f"corpus-v2-{args.samples}")
    if not os.path.isdir(corpus):
        subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), corpus, str(args.samples)],
                       check=True)
    text = os.path.join(args.corpus_cache, f"text-v1-{args.text_mb}.jsonl")
    if not os.path.exists(text):
        subprocess.run([sys.executable, os.path.join(HERE, "make_text_corpus.py"), text, str(args.text_mb)],
                       check=True)
    files = sum(len(f) for _, _, f in os.walk(corpus))
    texts = 1  # one JSONL file, cut between the tasks at line starts
    work = tempfile.mkdtemp(prefix="shardsmith-split-")
    try:
        rows = []
        for kind, inp, extra, same, n in [
            # Shares are whole shards: 16 MiB shards give each task ~23 of the ~46.
            ("pack", corpus, ["--shard-size", "16MiB"], lambda a, b: tree(a) == tree(b), files),
            ("tokenize", text, ["-t", "gpt2", "--format", "megatron"], lambda a, b: payload(a) == payload(b), texts),
        ]:
            one, two, merge, plan = compare(kind, inp, extra, work, args.repeat, same)
            rows.append((kind, one, two, merge, plan, n))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"split runs on {os.cpu_count()} cores, best of {args.repeat}; 2 tasks at once with -j 1 vs 1 process with -j 2")
    print(f"{'command':<10} {'1 process':>10} {'2 tasks+merge':>14} {'merge':>8} {'overhead':>9} {'list+plan/task':>15} {'per file':>10}")
    for kind, one, two, merge, plan, n in rows:
        per = f"{plan / n * 1e6:>8.1f}us" if n > 1 else f"{'-':>10}"
        print(f"{kind:<10} {one:>9.2f}s {two:>13.2f}s {merge:>7.2f}s {two / one - 1:>+8.1%} {plan:>14.2f}s {per}")


if __name__ == "__main__":
    main()
