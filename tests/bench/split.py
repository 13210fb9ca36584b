#!/usr/bin/env python3
"""Cost of splitting a run into tasks, on this machine, in one run, best of K. Not a
test: nothing asserts a time.

  pack      1 process with -j 2   vs  2 tasks with -j 1 each (run at once), then merge,
            and vs `shardsmith list` once, then the 2 tasks with --files-from, then merge
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
import resource
import shutil
import statistics
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
    """Wall seconds and CPU seconds (user + system, of every child process) of fn()."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


class Times:
    """Runs of one variant: best and median wall time, median CPU time."""

    def __init__(self):
        self.runs = []

    def add(self, wall_cpu):
        self.runs.append(wall_cpu)

    def best(self):
        return min(w for w, _ in self.runs)

    def median(self):
        return statistics.median(w for w, _ in self.runs)

    def cpu(self):
        return statistics.median(c for _, c in self.runs)


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
        merge_time.append(timed(lambda: run([BIN, "merge", split, "-q"]))[0])

    shared = os.path.join(work, f"{kind}-shared")
    listing = os.path.join(work, f"{kind}-files.tsv")

    def listed():
        # `shardsmith list` once, then every task reads the list (no walk, no stat).
        shutil.rmtree(shared, ignore_errors=True)
        run([BIN, "list", inp, "-o", listing, "-q"])
        at_once([[BIN, kind, inp, shared, "-j", "1", "-q", "--files-from", listing,
                  "--task-index", str(i), "--task-count", "2"] + args for i in range(2)])
        run([BIN, "merge", shared, "-q"])

    empty = os.path.join(work, f"{kind}-empty")

    def list_and_plan():
        shutil.rmtree(empty, ignore_errors=True)
        run([BIN, kind, inp, empty, "-j", "1", "-q", "--task-index", "0", "--task-count", "1000000"] + args)

    def plan_from_list():
        shutil.rmtree(empty, ignore_errors=True)
        run([BIN, kind, inp, empty, "-j", "1", "-q", "--files-from", listing,
             "--task-index", "0", "--task-count", "1000000"] + args)

    t1, t2, t3, tp, tl = Times(), Times(), Times(), Times(), Times()
    for _ in range(repeat):
        t1.add(timed(one))
        t2.add(timed(two))
        if kind == "pack":
            t3.add(timed(listed))
            tl.add(timed(plan_from_list))
        tp.add(timed(list_and_plan))
    if not same(single, split):
        sys.exit(f"{kind}: the split run differs from the single run")
    if t3.runs and not same(single, shared):
        sys.exit(f"{kind}: the split run from a shared list differs from the single run")
    return t1, t2, (t3, tl.best()) if t3.runs else None, min(merge_time), tp.best()


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
            one, two, three, merge, plan = compare(kind, inp, extra, work, args.repeat, same)
            rows.append((kind, one, two, three, merge, plan, n))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"split runs on {os.cpu_count()} cores, {args.repeat} runs each; 2 tasks at once with -j 1 vs 1 process with -j 2")
    print("wall: best / median seconds; overhead: of the medians; cpu: median user+system seconds of all processes")
    print(f"{'command':<10} {'1 process':>16} {'2 tasks+merge':>16} {'overhead':>9} {'cpu 1 / 2':>12} {'merge':>7} {'list+plan/task':>15} {'per file':>10}")
    for kind, one, two, three, merge, plan, n in rows:
        per = f"{plan / n * 1e6:>8.1f}us" if n > 1 else f"{'-':>10}"
        print(f"{kind:<10} {one.best():>7.2f} / {one.median():>5.2f}s {two.best():>7.2f} / {two.median():>5.2f}s "
              f"{two.median() / one.median() - 1:>+8.1%} {one.cpu():>5.2f} / {two.cpu():>4.2f}s {merge:>6.2f}s {plan:>14.2f}s {per}")
        if three is not None:
            three, from_list = three
            print(f"{'  listed once':<10}       {'':>10}{three.best():>7.2f} / {three.median():>5.2f}s "
                  f"{three.median() / one.median() - 1:>+8.1%}   {'':>5} {three.cpu():>4.2f}s {'':>7} {from_list:>14.2f}s "
                  f"{from_list / n * 1e6:>8.1f}us  (list, then 2 tasks --files-from, then merge)")


if __name__ == "__main__":
    main()
