#!/usr/bin/env python3
"""Reads a converted dataset (`shardsmith pack INPUT OUT --format F`, INPUT one of
make_convert_inputs.py's inputs) with the real reader of its format and compares every
key and every field with that input's samples in expected.json.

usage: check_convert.py EXPECTED_JSON INPUT_NAME OUT_DIR [--key-column NAME] [--fields F,G]
(--fields: the output was packed with `--fields F,G`; only those fields are expected;
 --any-order: the output was packed with --shuffle; the keys are compared as a set)
The format is OUT_DIR's: index.json (MDS: StreamingDataset with validate_hash, and each
column's stored bytes read from the shards), .parquet files (pyarrow), .tar/.tar.gz
shards (webdataset.WebDataset, no decoding). Shards are taken in manifest.json order.

Rules (see make_convert_inputs.py for the field kinds):
  - keys and their order are the input's (pack without --shuffle keeps input order);
  - a field read as bytes (WebDataset member, Parquet binary or string column) equals the
    expected bytes exactly, except float kinds (same number at the kind's width) and
    ndarrays (np.load gives the same dtype, shape and values);
  - a typed value (Parquet int/float, MDS decoded column) equals the expected value;
    an MDS column whose encoding stores its input unchanged holds exactly those bytes;
  - from an MDS input, MDS output keeps every column's encoding, and Parquet output
    stores integer columns as integers, float columns as floats, str/json as strings;
  - WebDataset output may leave out only a sample with a member name over 100 bytes, and
    only when manifest.json lists it under "skipped" with a reason.
Prints one line per failed check and "N passed, M failed"; exits 1 on failure.
"""
import base64
import glob
import io
import json
import math
import os
import sys
import tempfile
from decimal import Decimal

import numpy as np

import common
from common import check, finish

INT_KINDS = {"int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "str_int"}
FLOAT_KINDS = {"float16", "float32", "float64", "str_float"}
PASS_THROUGH = {"bytes", "str", "json", "jpeg", "png", "str_int", "str_float", "str_decimal"}


def raw(want):
    return base64.b64decode(want["b64"])


def short(v):
    text = repr(v)
    return text if len(text) <= 90 else text[:87] + "..."


def same_float(a, b, kind):
    width = {"float16": np.float16, "float32": np.float32}.get(kind, np.float64)
    a, b = width(a), width(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def same_array(a, b):
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def load_npy(data):
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as e:  # noqa: BLE001  (any failure is a mismatch)
        return f"not a .npy file ({e})"


def decoded(encoding, data):
    """What StreamingDataset returns for a column of ENCODING holding DATA (a field in
    its raw-file form: what shardsmith's MDS writer takes as input)."""
    name = encoding.split(":")[0]
    if name == "bytes":
        return data
    if name == "str":
        return data.decode()
    if name == "json":
        return json.loads(data)
    if name == "int":
        return int(data)
    if name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return getattr(np, name)(int(data))
    if name in ("float16", "float32", "float64"):
        return getattr(np, name)(float(data))
    if name == "str_int":
        return int(data)
    if name == "str_float":
        return float(data)
    if name == "str_decimal":
        return Decimal(data.decode().strip())
    if name in ("png", "jpeg"):
        from PIL import Image
        return Image.open(io.BytesIO(data))
    if name == "ndarray":
        return np.load(io.BytesIO(data), allow_pickle=False)
    raise ValueError(f"unexpected encoding {encoding}")


def same_value(got, want):
    if isinstance(want, np.ndarray):
        return same_array(got, want)
    if isinstance(want, np.generic):
        if type(got) is not type(want):
            return False
        return same_float(got, want, want.dtype.name) if want.dtype.kind == "f" else got == want
    if isinstance(want, float):
        return isinstance(got, float) and same_float(got, want, "float64")
    if hasattr(want, "getdata"):  # a PIL image: same mode, size and pixels
        return (hasattr(got, "getdata") and got.mode == want.mode and got.size == want.size
                and np.array_equal(np.asarray(got), np.asarray(want)))
    return type(got) is type(want) and got == want


def compare(got, want, encoding=None):
    """None when GOT (a value a reader returned) is the expected field WANT
    ({"kind", "b64"}); else what differs. ENCODING: the MDS column encoding GOT was
    decoded with (None for a WebDataset member or a Parquet value)."""
    kind, data = want["kind"], raw(want)
    if encoding is not None:
        try:
            value = decoded(encoding, data)
        except Exception as e:  # noqa: BLE001
            return f"expected bytes {short(data)} do not decode as {encoding}: {e}"
        return None if same_value(got, value) else f"{short(got)} where {encoding} {short(value)} was expected"
    if isinstance(got, str):
        got = got.encode()
    if isinstance(got, bytes):
        if kind == "ndarray":
            a, b = load_npy(got), load_npy(data)
            return None if same_array(a, b) else f"array {short(a)} where {short(b)} was expected"
        if kind in FLOAT_KINDS and kind != "str_float":
            try:
                ok = same_float(float(got.decode()), float(data), kind)
            except (ValueError, UnicodeDecodeError):
                ok = False
            return None if ok else f"{short(got)} where a {kind} equal to {data.decode()} was expected"
        return None if got == data else f"bytes {short(got)} (len {len(got)}) where {short(data)} (len {len(data)}) was expected"
    if isinstance(got, np.ndarray):
        b = load_npy(data) if kind == "ndarray" else None
        return None if same_array(got, b) else f"array {short(got)} where {kind} {short(b if b is not None else data)} was expected"
    if isinstance(got, bool) or got is None:
        return f"{short(got)} where {kind} {short(data)} was expected"
    if isinstance(got, (int, np.integer)):
        if kind not in INT_KINDS:
            return f"integer {got} where {kind} {short(data)} was expected"
        return None if int(got) == int(data) else f"{got} where {int(data)} was expected"
    if isinstance(got, (float, np.floating)):
        if kind not in FLOAT_KINDS:
            return f"float {got} where {kind} {short(data)} was expected"
        return None if same_float(float(got), float(data), kind) else f"{got} where {kind} {data.decode()} was expected"
    return f"unexpected value type {type(got).__name__}: {short(got)}"


# ---- readers ---------------------------------------------------------------------------

def load_manifest(out_dir):
    """manifest.json, or None where there is none (an input of make_convert_inputs.py,
    checked against itself)."""
    return common.load_manifest(out_dir) if os.path.exists(os.path.join(out_dir, "manifest.json")) else None


def manifest_paths(out_dir, suffixes):
    manifest = load_manifest(out_dir)
    if manifest is None:
        paths = sorted(glob.glob(os.path.join(out_dir, "**", "*"), recursive=True))
        return None, [p for p in paths if p.endswith(suffixes)]
    paths = [os.path.join(out_dir, e["path"]) for e in manifest["files"] if e["path"].endswith(suffixes)]
    return manifest, paths


def read_webdataset(out_dir):
    import webdataset as wds
    manifest, shards = manifest_paths(out_dir, (".tar", ".tar.gz", ".tgz", ".tar.zst"))
    check(bool(shards), "no .tar shards in manifest.json")
    rows = []
    for sample in wds.WebDataset(shards, shardshuffle=False, empty_check=False):
        rows.append((sample["__key__"], {k: v for k, v in sample.items() if not k.startswith("__")}, None))
    return manifest, rows, None


def read_parquet(out_dir, key_column):
    import pyarrow as pa
    import pyarrow.parquet as pq
    manifest, files = manifest_paths(out_dir, (".parquet",))
    check(bool(files), "no .parquet files in manifest.json")
    rows, types = [], {}
    for path in files:
        table = pq.read_table(path)
        for f in table.schema:
            types[f.name] = ("int" if pa.types.is_integer(f.type) else "float" if pa.types.is_floating(f.type)
                             else "str" if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                             else str(f.type))
        # ndarray:DTYPE:SHAPE columns: the raw values, dtype and shape in the field metadata
        arrays = {f.name: (np.dtype(f.metadata[b"dtype"].decode()).newbyteorder("<"), json.loads(f.metadata[b"shape"]))
                  for f in table.schema if f.metadata and b"dtype" in f.metadata and b"shape" in f.metadata}
        for row in table.to_pylist():
            for name, (dtype, shape) in arrays.items():
                if row.get(name) is not None:
                    row[name] = np.frombuffer(row[name], dtype).reshape(shape)
            key = row.pop(key_column)
            rows.append((key, {k: v for k, v in row.items() if v is not None}, None))
    return manifest, rows, types


def stored_columns(out_dir, index):
    """Every sample's columns as stored in the shards (decompressed, not decoded)."""
    from streaming.base.compression import decompress
    out = []
    for shard in index["shards"]:
        meta = shard["zip_data"] or shard["raw_data"]
        data = open(os.path.join(out_dir, meta["basename"]), "rb").read()
        if shard["zip_data"]:
            data = decompress(shard["compression"], data)
        n = int(np.frombuffer(data[:4], np.uint32)[0])
        offsets = np.frombuffer(data[4:4 + 4 * (n + 1)], np.uint32)
        for i in range(n):
            sample = data[offsets[i]:offsets[i + 1]]
            sizes, at = [], 0
            for size in shard["column_sizes"]:
                if size is None:
                    size = int(np.frombuffer(sample[at:at + 4], np.uint32)[0])
                    at += 4
                sizes.append(size)
            columns = {}
            for name, size in zip(shard["column_names"], sizes):
                columns[name] = sample[at:at + size]
                at += size
            out.append(columns)
    return out


def streaming_rows(s, root, validate):
    """Every sample of the MDS dataset at ROOT through StreamingDataset (remote=ROOT, a
    fresh local cache). StreamingDataset names its shared memory by the first free prefix
    number, and two processes that start together can pick the same one
    (`FileExistsError: '/000374_locals'`): other tests run readers at the same time, so a
    clash is retried."""
    import random
    import time
    for attempt in range(20):
        try:
            with tempfile.TemporaryDirectory() as tmp:
                ds = s.StreamingDataset(remote=root, local=os.path.join(tmp, "cache"), validate_hash=validate,
                                        shuffle=False, batch_size=1)
                rows = [ds[i] for i in range(len(ds))]
                del ds
                return rows
        except FileExistsError:
            if attempt == 19:
                raise
            time.sleep(0.1 + random.random() * 0.4)


def read_mds(out_dir, key_column):
    import streaming_shim
    s = streaming_shim.load()
    index = json.load(open(os.path.join(out_dir, "index.json")))
    manifest = load_manifest(out_dir)
    first = index["shards"][0]
    encodings = dict(zip(first["column_names"], first["column_encodings"]))
    for shard in index["shards"]:
        check(dict(zip(shard["column_names"], shard["column_encodings"])) == encodings,
              f"{(shard['zip_data'] or shard['raw_data'])['basename']}: columns differ from the first shard's")
    # An input checked against itself may have no key column: its keys are the indices.
    by_index = key_column not in encodings and manifest is None
    check(key_column in encodings or by_index, f"no key column {key_column!r} in {sorted(encodings)}")
    stored = stored_columns(out_dir, index)
    rows = []
    samples = streaming_rows(s, out_dir, first["hashes"][0] if first["hashes"] else None)
    check(len(samples) == len(stored), f"StreamingDataset: {len(samples)} samples, the shards hold {len(stored)}")
    for i, got in enumerate(samples):
        key = f"{i:09d}" if by_index else got.pop(key_column, None)
        rows.append((key, got, stored[i] if i < len(stored) else None))
    return manifest, rows, {c: e for c, e in encodings.items() if c != key_column}


def main():
    args = [a for a in sys.argv[1:]]
    key_column = "key"
    if "--key-column" in args:
        i = args.index("--key-column")
        key_column = args[i + 1]
        del args[i:i + 2]
    any_order = "--any-order" in args
    if any_order:
        args.remove("--any-order")
    only = None
    if "--fields" in args:
        i = args.index("--fields")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    expected_path, input_name, out_dir = args
    spec = json.load(open(expected_path, encoding="utf-8"))[input_name]
    expected = spec["samples"]
    in_encodings = spec.get("encodings")
    if only is not None:
        expected = [{"key": w["key"], "fields": {f: v for f, v in w["fields"].items() if f in only}} for w in expected]
        in_encodings = in_encodings and {f: e for f, e in in_encodings.items() if f in only}

    if os.path.exists(os.path.join(out_dir, "index.json")):
        fmt = "mds"
        manifest, rows, encodings = read_mds(out_dir, key_column)
    elif glob.glob(os.path.join(out_dir, "*.parquet")):
        fmt = "parquet"
        manifest, rows, encodings = read_parquet(out_dir, key_column)
    else:
        fmt = "webdataset"
        manifest, rows, encodings = read_webdataset(out_dir)
    print(f"{input_name} -> {fmt}: {len(rows)} samples read, {len(expected)} expected")

    # samples WebDataset output may leave out (and must list)
    skipped = (manifest or {}).get("skipped", [])
    got_keys = {k for k, _, _ in rows}
    left_out = set()
    for want in expected:
        key = want["key"]
        if key in got_keys:
            continue
        long_name = max(len(f"{key}.{f}".encode()) for f in want["fields"]) > 100
        listed = [s for s in skipped if key in s.get("path", "") and s.get("reason")]
        check(fmt == "webdataset" and long_name and listed,
              f"sample {key!r} is missing from the output" + (f" (listed as skipped: {listed[:1]})" if listed else ""))
        left_out.add(key)
    want_order = [w["key"] for w in expected if w["key"] not in left_out]
    got_order = [k for k, _, _ in rows]
    if any_order:
        check(got_order != want_order or len(got_order) < 3, "--any-order, but the samples are in input order")
        got_order, want_order = sorted(got_order), sorted(want_order)
    at = next((i for i, (a, b) in enumerate(zip(got_order, want_order)) if a != b), min(len(got_order), len(want_order)))
    check(got_order == want_order, f"keys or their order differ from sample {at} on: got {got_order[at:at + 3]}, "
          f"expected {want_order[at:at + 3]}")
    check(len(set(got_order)) == len(got_order), "a key appears twice")
    if manifest is not None:
        check(manifest["totals"]["samples"] == len(rows),
              f"manifest.json counts {manifest['totals']['samples']} samples, the reader {len(rows)}")

    # column types kept from a typed input
    if in_encodings and fmt == "mds":
        for f, e in in_encodings.items():
            check(encodings.get(f) == e, f"column {f}: encoding {encodings.get(f)} where the input's {e} was expected")
    if in_encodings and fmt == "parquet":
        for f, e in in_encodings.items():
            name = e.split(":")[0]
            want = ("int" if name in INT_KINDS - {"uint64", "str_int"} else
                    "float" if name in FLOAT_KINDS - {"str_float"} else "str" if name in ("str", "json") else None)
            if want:
                check(encodings.get(f) == want, f"column {f} ({e} in the input): Parquet type {encodings.get(f)}, expected {want}")

    by_key = {w["key"]: w["fields"] for w in expected}
    for key, got, stored in rows:
        want = by_key.get(key)
        if want is None:
            check(False, f"unexpected sample {key!r}")
            continue
        check(set(got) == set(want), f"sample {key!r}: fields {sorted(got)}, expected {sorted(want)}")
        for f in sorted(set(got) & set(want)):
            encoding = encodings.get(f) if fmt == "mds" else None
            problem = compare(got[f], want[f], encoding)
            check(problem is None, f"sample {key!r} field {f}: {problem}")
            if fmt == "mds" and stored is not None and encoding and encoding.split(":")[0] in PASS_THROUGH:
                check(stored.get(f) == raw(want[f]),
                      f"sample {key!r} column {f} ({encoding}): stored bytes {short(stored.get(f))} where "
                      f"{short(raw(want[f]))} was expected")

    finish()


if __name__ == "__main__":
    main()
