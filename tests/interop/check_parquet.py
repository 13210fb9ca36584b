#!/usr/bin/env python3
"""Reads shardsmith Parquet output with pyarrow and compares it with the raw input.

usage: check_parquet.py INPUT_DIR OUT_DIR [--key-column NAME]
INPUT_DIR is a tree of raw files (grouped into samples by the webdataset rule) or a
directory of Parquet files (rows are samples, in order). Checks every row's key and
every field's bytes, nulls for missing fields, row counts against the manifest, the
root digest, and the writer settings: compression, column statistics, the page index,
no dictionary encoding on binary columns. Prints "N passed, M failed".
"""
import glob
import os
import sys

import pyarrow.parquet as pq

from common import check, finish, load_manifest, raw_samples, root_digest_ok


def parquet_samples(root, key_column):
    out = []
    for f in sorted(glob.glob(os.path.join(root, "**", "*.parquet"), recursive=True)):
        for row in pq.read_table(f).to_pylist():
            key = row.pop(key_column)
            out.append((key, {k.lower(): v for k, v in row.items() if v is not None}))
    return out


def as_bytes(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    return v


def main():
    input_dir, out_dir = sys.argv[1], sys.argv[2]
    key_column = sys.argv[sys.argv.index("--key-column") + 1] if "--key-column" in sys.argv else "key"
    manifest = load_manifest(out_dir)
    parquet_input = bool(glob.glob(os.path.join(input_dir, "**", "*.parquet"), recursive=True))
    skipped = {s["path"] for s in manifest.get("skipped", [])}
    if parquet_input:
        expected = parquet_samples(input_dir, key_column)
    else:
        expected = [(k, f) for k, f in raw_samples(input_dir) if not any(p.startswith(k + ".") for p in skipped)]
    rows = []
    for entry in manifest["files"]:
        if not entry["path"].endswith(".parquet"):
            continue
        path = os.path.join(out_dir, entry["path"])
        table = pq.read_table(path)
        meta = pq.ParquetFile(path).metadata
        check(table.num_rows == entry["samples"], f"{path}: {table.num_rows} rows, manifest {entry['samples']}")
        check(meta.created_by.startswith("shardsmith"), f"{path}: created_by {meta.created_by}")
        names = table.schema.names
        check(names[0] == key_column and not table.schema.field(0).nullable, f"{path}: first column is not the non-null key")
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                col = meta.row_group(g).column(c)
                check(col.statistics is not None and col.statistics.has_null_count, f"{path}: no statistics for {col.path_in_schema}")
                check(col.has_column_index and col.has_offset_index, f"{path}: no page index for {col.path_in_schema}")
                kind = table.schema.field(c).type
                if str(kind) == "binary" or c == 0:
                    check(not any("DICT" in e for e in col.encodings), f"{path}: dictionary on {col.path_in_schema}")
        for row in table.to_pylist():
            rows.append((row.pop(key_column), {k: v for k, v in row.items() if v is not None}))
    check(len(rows) == len(expected), f"{len(rows)} rows, expected {len(expected)}")
    for (key, got), (want_key, want) in zip(rows, expected):
        check(key == want_key, f"key {key!r} where {want_key!r} was expected")
        check({k: as_bytes(v) if not isinstance(want.get(k), (int, float)) else v for k, v in got.items()} ==
              {k: as_bytes(v) for k, v in want.items()}, f"row {key!r}: {str(got)[:120]} vs {str(want)[:120]}")
    check(root_digest_ok(manifest), "manifest root digest")
    finish()


if __name__ == "__main__":
    main()
