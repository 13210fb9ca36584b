#!/usr/bin/env python3
"""The reference writers of the formats benchmark (issue 34), run in the torch env.

usage: formats_ref.py hf|litdata CORPUS OUTPUT WORK CHUNK_BYTES WORKERS

Reads the corpus as shardsmith groups it (key: the path up to the first dot of the file
name; field: the rest), in key order, each sample a dict of `__key__` (str), `jpg`
(bytes), `json` and `txt` (str), and writes it:
  hf       datasets.Dataset.from_generator(...) (its Arrow cache under WORK), then
           .save_to_disk(OUTPUT, max_shard_size=CHUNK_BYTES): the usual way to turn files
           into a save_to_disk directory
  litdata  litdata.optimize(fn=load, inputs=keys, output_dir=OUTPUT,
           chunk_bytes=CHUNK_BYTES, num_workers=WORKERS)
Imports are done before the clock starts; the seconds of the work alone are written to
WORK/KIND-seconds (litdata prints its own progress on stdout).
"""
import os
import sys
import time


def samples(corpus):
    """{key: {field: path}} of the corpus, keys sorted."""
    out = {}
    for root, _, files in os.walk(corpus):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), corpus)
            folder, base = os.path.split(rel)
            stem, _, ext = base.partition(".")
            out.setdefault(os.path.join(folder, stem), {})[ext.lower()] = os.path.join(root, name)
    return dict(sorted(out.items()))


def load(corpus_samples, key):
    row = {"__key__": key}
    for field, path in sorted(corpus_samples[key].items()):
        with open(path, "rb") as f:
            data = f.read()
        row[field] = data if field == "jpg" else data.decode("utf-8")
    return row


def main():
    kind, corpus, output, work, chunk, workers = sys.argv[1:7]
    chunk, workers = int(chunk), int(workers)
    index = samples(corpus)
    if kind == "hf":
        import datasets

        datasets.disable_progress_bars()

        def gen():
            for key in index:
                yield load(index, key)

        start = time.perf_counter()
        ds = datasets.Dataset.from_generator(gen, cache_dir=os.path.join(work, "hf-cache"))
        ds.save_to_disk(output, max_shard_size=chunk)
    else:
        import functools

        import litdata

        start = time.perf_counter()
        litdata.optimize(fn=functools.partial(load, index), inputs=list(index), output_dir=output,
                         chunk_bytes=chunk, num_workers=workers, mode="overwrite")
    with open(os.path.join(work, f"{kind}-seconds"), "w") as f:
        f.write(f"{time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
