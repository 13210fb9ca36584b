#!/usr/bin/env python3
"""The reference tools a user would otherwise run, on the benchmark's work.

usage: reference.py wds CORPUS OUTDIR      webdataset.ShardWriter, 64 MiB shards
       reference.py sha256 FILE...          hashlib.sha256, one file after another
Prints one JSON line on stdout: {"tool": ..., "seconds": ...}; the seconds exclude
interpreter start-up and library import, which are not the work being compared.
"""
import hashlib
import json
import os
import sys
import time


def corpus_samples(root):
    """(key, {ext: bytes}) in sorted key order, files grouped by their first dot."""
    for folder in sorted(os.listdir(root)):
        names = sorted(os.listdir(os.path.join(root, folder)))
        sample, current = {}, None
        for name in names:
            stem, _, ext = name.partition(".")
            if stem != current and sample:
                yield f"{folder}/{current}", sample
                sample = {}
            current = stem
            with open(os.path.join(root, folder, name), "rb") as f:
                sample[ext] = f.read()
        if sample:
            yield f"{folder}/{current}", sample


def wds(corpus, out):
    import webdataset
    os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    pattern = os.path.join(out, "ref-%06d.tar")
    with webdataset.ShardWriter(pattern, maxsize=64 << 20, maxcount=10**9, verbose=0) as writer:
        for key, fields in corpus_samples(corpus):
            writer.write({"__key__": key, **fields})
    return time.perf_counter() - start


def sha256(*paths):
    start = time.perf_counter()
    for path in paths:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    return time.perf_counter() - start


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    if tool == "wds":
        import webdataset  # noqa: F401  (import before the clock starts)
    seconds = {"wds": wds, "sha256": sha256}[tool](*args)
    print(json.dumps({"tool": tool, "seconds": seconds}))


if __name__ == "__main__":
    main()
