#!/usr/bin/env python3
"""The reference tools a user would otherwise run, on the benchmark's work.

usage: reference.py wds CORPUS OUTDIR      webdataset.ShardWriter, 64 MiB shards
       reference.py mds CORPUS OUTDIR      streaming.MDSWriter, 64 MiB shards, sha1 hashes; JSON and
                                           text handed over decoded, as a user converting files would
       reference.py mds-bytes CORPUS OUTDIR  the same, every field handed over as raw bytes
       reference.py wds2mds SHARDS OUTDIR  WebDataset shards -> MDS as streaming's own conversion example
                                           does: webdataset.WebDataset (no decoding) feeding
                                           streaming.MDSWriter (64 MiB, sha1), fields as raw bytes
       reference.py parquet CORPUS OUTDIR  pyarrow, ~64 MiB files, snappy, 4096-row groups
       reference.py sha256 FILE...          hashlib.sha256, one file after another
       reference.py tokenize TEXT.jsonl OUT.bin ENCODING
                                            tiktoken encode_ordinary_batch on every core,
                                            EOT appended per document, nanoGPT's uint16
                                            (uint32 past 65536 ids) file
       reference.py gigatoken TEXT.jsonl OUT.bin RANK_FILE
                                            gigatoken 0.10's fastest path (encode_files on a
                                            JsonlFileSource: its Rust side reads the file, on
                                            every core), the same uint16 file; RANK_FILE is a
                                            .tiktoken file named after its encoding
       reference.py tiktoken-cache CACHE_DIR RANK_FILE...
                                            fills a TIKTOKEN_CACHE_DIR from .tiktoken rank
                                            files (offline use of Python tiktoken)
Prints one JSON line on stdout: {"tool": ..., "seconds": ...}; the seconds exclude
interpreter start-up and library import, which are not the work being compared.
tokenize needs TIKTOKEN_CACHE_DIR (see tiktoken-cache).
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


def mds(corpus, out, raw=False):
    import streaming_shim
    writer_class = streaming_shim.load().MDSWriter
    columns = {"key": "str", "jpg": "bytes", "json": "json", "txt": "str"}
    start = time.perf_counter()
    with writer_class(out=out, columns=columns, size_limit=64 << 20, hashes=["sha1"], progress_bar=False) as writer:
        for key, fields in corpus_samples(corpus):
            if raw:
                # Bytes are stored unchanged whatever the encoding, as shardsmith stores files.
                writer.write({"key": key, **fields})
            else:
                writer.write({"key": key, "jpg": fields["jpg"], "json": json.loads(fields["json"]),
                              "txt": fields["txt"].decode()})
    return time.perf_counter() - start


def mds_bytes(corpus, out):
    return mds(corpus, out, raw=True)


def wds_to_mds(shards, out):
    import webdataset
    import streaming_shim
    writer_class = streaming_shim.load().MDSWriter
    urls = sorted(os.path.join(shards, f) for f in os.listdir(shards) if f.endswith(".tar"))
    columns = {"key": "str", "jpg": "bytes", "json": "json", "txt": "str"}
    start = time.perf_counter()
    dataset = webdataset.WebDataset(urls, shardshuffle=False, empty_check=False)
    with writer_class(out=out, columns=columns, size_limit=64 << 20, hashes=["sha1"], progress_bar=False) as writer:
        for sample in dataset:
            # Bytes are stored unchanged whatever the encoding, as shardsmith stores them.
            writer.write({"key": sample["__key__"], **{c: sample[c] for c in ("jpg", "json", "txt")}})
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


# sha256 of the published rank files (tiktoken_ext/openai_public.py's expected_hash).
RANK_SHA256 = {
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "p50k_base": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
RANK_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def tiktoken_cache(cache_dir, *rank_files):
    """tiktoken looks a rank file up in TIKTOKEN_CACHE_DIR under the SHA-1 of its URL and
    checks its SHA-256; copy each file there under that name (after the same check)."""
    start = time.perf_counter()
    os.makedirs(cache_dir, exist_ok=True)
    for path in rank_files:
        name = os.path.basename(path).removesuffix(".tiktoken")
        with open(path, "rb") as f:
            data = f.read()
        if hashlib.sha256(data).hexdigest() != RANK_SHA256[name]:
            sys.exit(f"{path}: not the published {name} rank file")
        key = hashlib.sha1(RANK_URL.format(name).encode()).hexdigest()
        with open(os.path.join(cache_dir, key), "wb") as f:
            f.write(data)
    return time.perf_counter() - start


def tokenize(src, out, encoding):
    import numpy as np
    import tiktoken
    start = time.perf_counter()
    enc = tiktoken.get_encoding(encoding)
    with open(src, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    ids = enc.encode_ordinary_batch(texts, num_threads=os.cpu_count())
    dtype = np.uint16 if enc.n_vocab <= 1 << 16 else np.uint32
    lengths = np.fromiter((len(d) + 1 for d in ids), dtype=np.int64, count=len(ids))
    arr = np.empty(int(lengths.sum()), dtype=dtype)
    pos = 0
    for doc in ids:
        arr[pos:pos + len(doc)] = doc
        arr[pos + len(doc)] = enc.eot_token
        pos += len(doc) + 1
    arr.tofile(out)
    return time.perf_counter() - start


def gigatoken_tokenize(src, out, rank_file):
    import awkward as ak
    import gigatoken
    import numpy as np
    start = time.perf_counter()
    # The pretokenizer and the special tokens come from the file's name (r50k_base, ...).
    tokenizer = gigatoken.Tokenizer.from_tiktoken(rank_file)
    tokens = tokenizer.encode_files(gigatoken.JsonlFileSource([src], field="text"))
    encoded = time.perf_counter()
    compat = tokenizer.as_tiktoken()
    dtype = np.uint16 if compat.n_vocab <= 1 << 16 else np.uint32
    lengths = ak.num(tokens).to_numpy()
    flat = ak.flatten(tokens).to_numpy()
    ends = np.cumsum(lengths + 1) - 1  # where each document's EOT goes
    arr = np.empty(len(flat) + len(lengths), dtype=dtype)
    keep = np.ones(len(arr), dtype=bool)
    keep[ends] = False
    arr[keep] = flat
    arr[ends] = compat.eot_token
    arr.tofile(out)
    return {"seconds": time.perf_counter() - start, "encode_seconds": encoded - start}


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    if tool == "wds":
        import webdataset  # noqa: F401  (import before the clock starts)
    elif tool in ("mds", "mds-bytes", "wds2mds"):
        import webdataset  # noqa: F401
        import streaming_shim
        streaming_shim.load()
    elif tool == "parquet":
        import pyarrow.parquet  # noqa: F401
    elif tool == "gigatoken":
        import awkward  # noqa: F401
        import gigatoken  # noqa: F401
        import numpy  # noqa: F401
    seconds = {"wds": wds, "mds": mds, "mds-bytes": mds_bytes, "wds2mds": wds_to_mds, "parquet": parquet, "sha256": sha256, "tokenize": tokenize,
               "gigatoken": gigatoken_tokenize, "tiktoken-cache": tiktoken_cache}[tool](*args)
    # A tool that times more than one thing returns a dict with its "seconds".
    print(json.dumps({"tool": tool, **(seconds if isinstance(seconds, dict) else {"seconds": seconds})}))


if __name__ == "__main__":
    main()
