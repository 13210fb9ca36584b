#!/usr/bin/env python3
"""The reference tools a user would otherwise run, on the benchmark's work.

usage: reference.py wds CORPUS OUTDIR      webdataset.ShardWriter, 64 MiB shards
       reference.py mds CORPUS OUTDIR      streaming.MDSWriter, 64 MiB shards, sha1 hashes
       reference.py parquet CORPUS OUTDIR  pyarrow, ~64 MiB files, snappy, 4096-row groups
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


def mds(corpus, out):
    import streaming_shim
    writer_class = streaming_shim.load().MDSWriter
    columns = {"key": "str", "jpg": "bytes", "json": "json", "txt": "str"}
    start = time.perf_counter()
    with writer_class(out=out, columns=columns, size_limit=64 << 20, hashes=["sha1"], progress_bar=False) as writer:
        for key, fields in corpus_samples(corpus):
            # Files as bytes: MDSWriter stores bytes unchanged, as shardsmith does.
            writer.write({"key": key, **fields})
    return time.perf_counter() - start


def parquet(corpus, out):
    import pyarrow as pa
    import pyarrow.parquet as pq
    os.makedirs(out, exist_ok=True)
    schema = pa.schema([("key", pa.string()), ("jpg", pa.binary()), ("json", pa.string()), ("txt", pa.string())])
    start = time.perf_counter()
    rows, size, part = [], 0, 0

    def flush():
        table = pa.Table.from_pylist(rows, schema=schema)
        pq.write_table(table, os.path.join(out, f"part-{part:06d}.parquet"), row_group_size=4096, compression="snappy")

    for key, fields in corpus_samples(corpus):
        rows.append({"key": key, "jpg": fields["jpg"], "json": fields["json"].decode(), "txt": fields["txt"].decode()})
        size += sum(len(v) for v in fields.values())
        if size >= 64 << 20:
            flush()
            part, rows, size = part + 1, [], 0
    if rows:
        flush()
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
    elif tool == "mds":
        import streaming_shim
        streaming_shim.load()
    elif tool == "parquet":
        import pyarrow.parquet  # noqa: F401
    seconds = {"wds": wds, "mds": mds, "parquet": parquet, "sha256": sha256}[tool](*args)
    print(json.dumps({"tool": tool, "seconds": seconds}))


if __name__ == "__main__":
    main()
