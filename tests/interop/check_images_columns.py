#!/usr/bin/env python3
"""Checks the MDS and Parquet output of `shardsmith pack --image-size ...` against the
WebDataset output of the same input and options (itself checked by check_images.py).

usage: PYTHONPATH=tests/interop/torchstub check_images_columns.py WDS_DIR [--mds DIR] [--parquet DIR]
                                                                  [--key-column key]
Runs in the main interop venv (tests/interop/setup_env.sh): mosaicml-streaming, pyarrow.
For every sample, in order:
  - the same keys as the shards, in the same order;
  - the image column (jpg, png, webp or npy): with MDS encoding bytes, or Parquet binary,
    the very bytes of the tar member; with MDS jpeg/png (Pillow images), the same pixels;
    with ndarray, the array of the .npy member; a Parquet fixed-size binary column (one
    shape for all), the raw pixels reshaped by its field metadata (dtype uint8, shape);
  - width, height, original_width, original_height: int32 columns (MDS encoding int32,
    Parquet int32) equal to the WebDataset json's values; source_format a str column;
  - a json column, if any: the input's json, i.e. the WebDataset json without those five keys;
  - every other column: the tar member's bytes (a field with no column, e.g. left out by
    --fields, is a note, not a failure); a sample in the shards but not here must be listed
    under "skipped" in this output's manifest.json (MDS cannot hold a missing field).
MDS is read with StreamingDataset(local=DIR, shuffle=False, batch_size=1), Parquet with
pyarrow. Prints "N passed, M failed" and a JSON summary; exits 1 on failure.
"""
import argparse
import io
import json
import os
import sys
import tarfile

import numpy as np

import common
from common import check, key_field, load_manifest

IMAGE_COLUMNS = ("jpg", "png", "webp", "npy")
INT_KEYS = ("width", "height", "original_width", "original_height")
IMAGE_KEYS = INT_KEYS + ("source_format",)

notes = []


def wds_samples(out_dir):
    """[(key, {field: bytes})] in shard and member order, read with tarfile."""
    manifest = load_manifest(out_dir)
    samples = []
    for entry in manifest["files"]:
        if ".tar" not in entry["path"]:
            continue
        with tarfile.open(os.path.join(out_dir, entry["path"])) as tar:
            for member in tar:
                key, field = key_field(member.name)
                if not samples or samples[-1][0] != key:
                    samples.append((key, {}))
                samples[-1][1][field] = tar.extractfile(member).read()
    return samples


def same_image(column, got, want_bytes):
    from PIL import Image
    if isinstance(got, (bytes, bytearray, memoryview)):
        return bytes(got) == want_bytes
    if isinstance(got, np.ndarray):
        want = np.load(io.BytesIO(want_bytes))
        return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    if isinstance(got, Image.Image):
        want = Image.open(io.BytesIO(want_bytes))
        return got.size == want.size and np.array_equal(np.asarray(got.convert("RGBA")),
                                                        np.asarray(want.convert("RGBA")))
    return False


def compare(what, key, row, fields, int_type):
    meta = json.loads(fields["json"]) if "json" in fields else {}
    rest = {k: v for k, v in meta.items() if k not in IMAGE_KEYS}
    image = [c for c in IMAGE_COLUMNS if c in fields]
    check(len(image) == 1, f"{what} {key}: the shards hold image fields {image}")
    for col, value in row.items():
        if col in INT_KEYS:
            check(int_type(value), f"{what} {key}: {col} is {type(value).__name__}, not int32")
            check(value is not None and int(value) == meta.get(col), f"{what} {key}: {col} {value} vs {meta.get(col)}")
        elif col == "source_format":
            check(value == meta.get(col), f"{what} {key}: source_format {value!r} vs {meta.get(col)!r}")
        elif col in image:
            check(same_image(col, value, fields[col]), f"{what} {key}: {col} differs from the tar member")
        elif col == "json":
            got = json.loads(value) if isinstance(value, (bytes, str)) else value
            check(got == rest or (not rest and got in (None, {})),
                  f"{what} {key}: json {str(got):.80} vs {str(rest):.80}")
        elif value is not None:
            got = value.encode() if isinstance(value, str) else value
            check(got == fields.get(col), f"{what} {key}: column {col} differs from the tar member")
    for k in IMAGE_KEYS + tuple(image):
        check(k in row, f"{what} {key}: no {k} column")
    absent = [f for f in fields if f not in IMAGE_COLUMNS and f != "json" and f not in row]
    absent += ["json"] if rest and "json" not in row else []
    if absent:  # --fields can leave them out: MDS columns are the same for every sample
        notes.append(f"{what} {key}: no column for {absent}")


def in_order(what, out_dir, got_keys, samples):
    """The keys are the shards' keys, in order; any sample missing is listed as skipped."""
    path = os.path.join(out_dir, "manifest.json")
    manifest = load_manifest(out_dir) if os.path.exists(path) else {}
    skipped = {key_field(s["path"])[0] for s in manifest.get("skipped", [])}
    by_key = dict(samples)
    expected = [k for k, _ in samples if k in set(got_keys)]
    check(got_keys == expected, f"{what}: keys not in the shards' order or unknown: {got_keys[:5]}...")
    for k, _ in samples:
        if k not in set(got_keys):
            check(k in skipped, f"{what}: sample {k!r} is missing and not listed as skipped")
    return [(k, by_key[k]) for k in got_keys if k in by_key]


def check_mds(mds_dir, samples, key_column):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import streaming_shim
    s = streaming_shim.load()
    index = json.load(open(os.path.join(mds_dir, "index.json")))
    first = index["shards"][0]
    columns = dict(zip(first["column_names"], first["column_encodings"]))
    for k in INT_KEYS:
        check(columns.get(k) == "int32", f"MDS: column {k} has encoding {columns.get(k)}, not int32")
    check(columns.get("source_format") == "str", f"MDS: source_format has encoding {columns.get('source_format')}")
    s.clean()
    ds = s.StreamingDataset(local=mds_dir, shuffle=False, batch_size=1)
    rows = [dict(ds[i]) for i in range(len(ds))]
    del ds
    s.clean()
    keys = [row.pop(key_column, None) for row in rows]
    for row, (key, fields) in zip(rows, in_order("MDS", mds_dir, keys, samples)):
        compare("MDS", key, row, fields, lambda v: isinstance(v, np.int32))
    return len(rows)


def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def check_parquet(pq_dir, samples, key_column):
    import pyarrow as pa
    import pyarrow.parquet as pq
    manifest = load_manifest(pq_dir)
    rows = []
    for entry in manifest["files"]:
        if not entry["path"].endswith(".parquet"):
            continue
        table = pq.read_table(os.path.join(pq_dir, entry["path"]))
        for k in INT_KEYS:
            t = table.schema.field(k).type if k in table.schema.names else None
            check(t == pa.int32(), f"Parquet {entry['path']}: column {k} is {t}, not int32")
        t = table.schema.field("source_format").type if "source_format" in table.schema.names else None
        check(t in (pa.string(), pa.large_string()), f"Parquet {entry['path']}: source_format is {t}, not string")
        for name in IMAGE_COLUMNS:
            if name not in table.schema.names:
                continue
            field = table.schema.field(name)
            if pa.types.is_fixed_size_binary(field.type):
                # One shape for every sample: the raw pixels, dtype and shape in metadata.
                meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
                check(meta.get("dtype") == "uint8" and "shape" in meta,
                      f"Parquet {entry['path']}: fixed-size column {name} has metadata {meta}")
                shape = tuple(json.loads(meta.get("shape", "[]")))
                check(field.type.byte_width == int(np.prod(shape)),
                      f"Parquet {entry['path']}: {name} is {field.type}, shape {shape}")
                arrays = np.frombuffer(table.column(name).combine_chunks().buffers()[1], np.uint8)
                arrays = arrays[:len(table) * field.type.byte_width].reshape(len(table), *shape)
                table = table.drop_columns([name]).append_column(
                    name, pa.array([npy_bytes(a) for a in arrays], pa.binary()))
        rows.extend(table.to_pylist())
    keys = [row.pop(key_column, None) for row in rows]
    for row, (key, fields) in zip(rows, in_order("Parquet", pq_dir, keys, samples)):
        compare("Parquet", key, {c: v for c, v in row.items() if v is not None}, fields, lambda v: isinstance(v, int))
    return len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wds")
    ap.add_argument("--mds")
    ap.add_argument("--parquet")
    ap.add_argument("--key-column", default="key")
    args = ap.parse_args()
    samples = wds_samples(args.wds)
    check(len(samples) > 0, "the WebDataset output holds no samples")
    counts = {"samples": len(samples)}
    if args.mds:
        counts["mds"] = check_mds(args.mds, samples, args.key_column)
    if args.parquet:
        counts["parquet"] = check_parquet(args.parquet, samples, args.key_column)
    for n in notes:
        print("note:", n)
    print(common.summary())
    print(json.dumps({**counts, "passed": common.passed, "failed": len(common.failures), "notes": len(notes)}))
    sys.exit(1 if common.failures else 0)


if __name__ == "__main__":
    main()
