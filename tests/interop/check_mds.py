#!/usr/bin/env python3
"""Checks a shardsmith MDS dataset against the real mosaicml-streaming 0.13.0.

usage: check_mds.py INPUT_DIR OUT_DIR
       check_mds.py --merged INPUT_DIR OUT_DIR   (OUT_DIR made by `shardsmith merge`)
The options (columns, compression, hashes, size_limit) are read from OUT_DIR's
index.json; the samples are rebuilt from INPUT_DIR by the webdataset grouping rule.
Checks:
  1. golden bytes: MDSWriter, given the same samples and options, writes byte-identical
     shards (raw form) and index.json (compressed files too, except gz/br whose
     compressors differ between implementations: there raw_data must match);
  2. StreamingDataset(remote=OUT, local=fresh, validate_hash=<first hash>) returns every
     sample with the expected values and dtypes; LocalDataset too when uncompressed;
  3. a byte flipped in a copy of a shard makes StreamingDataset raise "Checksum failure".
With --merged, step 1 is replaced by: streaming's own merge_index over copies of the
parts lists the same shards as our root index.json.
Prints "N passed, M failed"; exits 1 on failure.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

import streaming_shim
from common import check, finish, raw_samples


def writer_value(encoding, data):
    """What a Python user hands MDSWriter for this column."""
    name = encoding.split(":")[0]
    if name == "int":
        return int(data)
    if name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return getattr(np, name)(int(data))
    if name in ("float16", "float32", "float64"):
        return getattr(np, name)(float(data))
    if name == "ndarray":
        import io
        return np.load(io.BytesIO(data)) if data.startswith(b"\x93NUMPY") else data
    return data  # bytes pass through MDSWriter unchanged, whatever the encoding


def expected_value(encoding, data):
    """What a reader should return."""
    name = encoding.split(":")[0]
    if name == "str":
        return data.decode()
    if name == "json":
        return json.loads(data)
    if name == "str_int":
        return int(data)
    if name == "str_float":
        return float(data)
    if name == "str_decimal":
        from decimal import Decimal
        return Decimal(data.decode().strip())
    return writer_value(encoding, data)


def same(a, b):
    if isinstance(b, np.ndarray) or isinstance(a, np.ndarray):
        return isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(b, np.generic):
        return type(a) is type(b) and a == b
    if isinstance(b, float) and b != b:
        return a != a
    return a == b


def golden(s, out_dir, index, columns, key_column, compression, hashes, limit, samples):
    """MDSWriter, given the same samples and options, writes the same bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref")
        with s.MDSWriter(out=ref, columns=columns, compression=compression, hashes=hashes, size_limit=limit,
                         progress_bar=False) as writer:
            for key, fields in samples:
                row = {c: writer_value(e, fields[c]) for c, e in columns.items() if c != key_column}
                row[key_column] = key
                writer.write(row)
        ref_index = json.load(open(os.path.join(ref, "index.json")))
        # MDSWriter writes an empty first shard when the first sample is over the limit; we never do.
        ref_shards = [e for e in ref_index["shards"] if e["samples"] > 0]
        check(len(ref_shards) == len(index["shards"]), f"shard count {len(index['shards'])} vs MDSWriter {len(ref_shards)}")
        byte_exact = compression is None or compression.split(":")[0] in ("zstd", "bz2", "snappy")
        if byte_exact and len(ref_shards) == len(ref_index["shards"]):
            ours = open(os.path.join(out_dir, "index.json"), "rb").read()
            theirs = open(os.path.join(ref, "index.json"), "rb").read()
            check(ours == theirs, "index.json differs from MDSWriter's")
        for mine, theirs in zip(index["shards"], ref_shards):
            for k in mine:
                if k in ("raw_data", "zip_data"):
                    continue
                check(mine[k] == theirs[k], f"shard key {k}: {mine[k]} vs MDSWriter {theirs[k]}")
            check(mine["raw_data"]["bytes"] == theirs["raw_data"]["bytes"] and mine["raw_data"]["hashes"] == theirs["raw_data"]["hashes"],
                  f"raw_data of {mine['raw_data']['basename']} differs from MDSWriter's ({mine['raw_data']} vs {theirs['raw_data']})")
            if byte_exact:
                name = (mine["zip_data"] or mine["raw_data"])["basename"]
                their_name = (theirs["zip_data"] or theirs["raw_data"])["basename"]
                check(open(os.path.join(out_dir, name), "rb").read() == open(os.path.join(ref, their_name), "rb").read(),
                      f"{name} differs from MDSWriter's {their_name}")


def compare_with_merge_index(s, out_dir, index):
    # merge_index(root) would read every .json below root, our parts' manifest.json
    # included; the list form reads just the part indices (as cli/README.md advises under merge).
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "out")
        os.makedirs(copy)
        parts = sorted((p for p in os.listdir(out_dir) if os.path.isfile(os.path.join(out_dir, p, "index.json"))),
                       key=lambda p: (len(p), p))
        for part in parts:
            shutil.copytree(os.path.join(out_dir, part), os.path.join(copy, part))
        s.merge_index([os.path.join(copy, p, "index.json") for p in parts], copy, keep_local=True)
        theirs = json.load(open(os.path.join(copy, "index.json")))
    canon = lambda entries: sorted(json.dumps(e, sort_keys=True) for e in entries)
    check(canon(theirs["shards"]) == canon(index["shards"]), "root index differs from streaming's merge_index")
    check(theirs["version"] == index["version"] == 2, "merged index version")


def main():
    merged = sys.argv[1] == "--merged"
    args = sys.argv[2:] if merged else sys.argv[1:]
    input_dir, out_dir = args[0], args[1]
    s = streaming_shim.load()
    index = json.load(open(os.path.join(out_dir, "index.json")))
    first = index["shards"][0]
    columns = dict(zip(first["column_names"], first["column_encodings"]))
    key_column = [c for c in columns if all(c not in fields for _, fields in raw_samples(input_dir)[:1])][0]
    compression, hashes, limit = first["compression"], first["hashes"], first["size_limit"]
    samples = raw_samples(input_dir)

    # 1. golden bytes (or, for a merged dataset, streaming's own merge)
    if merged:
        compare_with_merge_index(s, out_dir, index)
    else:
        golden(s, out_dir, index, columns, key_column, compression, hashes, limit, samples)

    # 2. read back through the real readers
    expected = {key: {c: (key if c == key_column else expected_value(e, fields[c])) for c, e in columns.items()}
                for key, fields in samples}
    validate = hashes[0] if hashes else None
    readers = [("StreamingDataset(remote)", lambda tmp: s.StreamingDataset(remote=out_dir, local=os.path.join(tmp, "cache"),
                                                                        validate_hash=validate, shuffle=False, batch_size=1))]
    if compression is None:
        readers.append(("LocalDataset", lambda tmp: s.LocalDataset(out_dir)))
    for name, make in readers:
        s.clean()
        with tempfile.TemporaryDirectory() as tmp:
            ds = make(tmp)
            check(len(ds) == len(expected), f"{name}: {len(ds)} samples, expected {len(expected)}")
            seen = set()
            for i in range(len(ds)):
                got = ds[i]
                key = got[key_column]
                seen.add(key)
                want = expected.get(key)
                if want is None:
                    check(False, f"{name}: unknown key {key!r}")
                    continue
                for c in columns:
                    check(same(got[c], want[c]), f"{name}: sample {key!r} column {c}: {got[c]!r:.80} vs {want[c]!r:.80}")
            check(seen == set(expected), f"{name}: keys differ")
            del ds

    # 3. a damaged shard is caught by the reader's hash check
    if validate:
        s.clean()
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad")
            shutil.copytree(out_dir, bad)
            name = (index["shards"][0]["zip_data"] or index["shards"][0]["raw_data"])["basename"]
            data = bytearray(open(os.path.join(bad, name), "rb").read())
            data[len(data) // 2] ^= 0x10
            open(os.path.join(bad, name), "wb").write(data)
            try:
                ds = s.StreamingDataset(remote=bad, local=os.path.join(tmp, "cache"), validate_hash=validate,
                                        shuffle=False, batch_size=1)
                ds[0]
                check(False, "flipped byte not detected by StreamingDataset")
            except ValueError as e:
                check("Checksum failure" in str(e), f"unexpected error for a flipped byte: {e}")

    finish()


if __name__ == "__main__":
    main()
