#!/usr/bin/env python3
"""Hugging Face `save_to_disk` directories and shardsmith: its hf output read back, hf
input written by `datasets` itself, and round trips.

usage:
  check_hf.py INPUT_DIR OUT_DIR [--reader pyarrow|datasets] [--key-column NAME]
      reads shardsmith's hf output OUT_DIR (the files its state.json lists, with
      pyarrow.ipc, or with datasets.load_from_disk) and compares every key and byte with
      INPUT_DIR: a tree of raw files (the webdataset rule, samples left out by the
      manifest skipped) or a save_to_disk directory; checks the rows against the
      manifest, the features of dataset_info.json against the Arrow schema, the root
      digest. The pyarrow reader needs no `datasets` (the conformance test's env).
  check_hf.py make DIR [--no-key] [--plain]
      writes a dataset with binary, string, int, float, list and struct columns (no
      list and struct with --plain; a `__key__` column unless --no-key) with
      save_to_disk(num_shards=3).
  check_hf.py wds HF_DIR WDS_DIR
      compares every value of HF_DIR (load_from_disk) with the tar shards of WDS_DIR:
      the key is `__key__`, else the row index as 9 digits; binary and string values
      are the members' bytes, numbers their text, lists and structs their JSON.
  check_hf.py same HF_DIR OTHER_DIR
      load_from_disk of both gives the same features and rows.
Prints "N passed, M failed".
"""
import glob
import json
import math
import os
import sys
import tarfile

import pyarrow as pa

from common import check, finish, key_field, load_manifest, raw_samples, root_digest_ok


def state_files(root):
    with open(os.path.join(root, "state.json"), encoding="utf-8") as f:
        return [os.path.join(root, d["filename"]) for d in json.load(f)["_data_files"]]


def pyarrow_rows(root):
    """[(file, [row dict])] of a save_to_disk directory, read with pyarrow only."""
    out = []
    for path in state_files(root):
        with pa.ipc.open_stream(path) as reader:
            out.append((path, reader.read_all().to_pylist()))
    return out


def datasets_rows(root):
    from datasets import load_from_disk

    return [(root, load_from_disk(root).to_list())]


def as_bytes(v):
    """A value as our fields hold it: text as UTF-8, lists and structs as their JSON
    (compact, in schema order), numbers as they are (typed columns)."""
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, (list, dict)):
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()
    return v


def check_output(input_dir, out_dir, reader, key_column):
    manifest = load_manifest(out_dir)
    skipped = {s["path"] for s in manifest.get("skipped", [])}
    if os.path.exists(os.path.join(input_dir, "state.json")):
        expected = []
        for i, row in enumerate(r for _, rows in pyarrow_rows(input_dir) for r in rows):
            key = row.pop("__key__", None) or f"{i:09}"
            expected.append((key, {k: v for k, v in row.items() if v is not None}))
    else:
        expected = [(k, f) for k, f in raw_samples(input_dir) if not any(p.startswith(k + ".") for p in skipped)]
    per_file = pyarrow_rows(out_dir)
    counts = {e["path"]: e.get("samples") for e in manifest["files"]}
    for path, rows in per_file:
        name = os.path.relpath(path, out_dir)
        check(counts.get(name) == len(rows), f"{name}: {len(rows)} rows, manifest {counts.get(name)}")
        schema = pa.ipc.open_stream(path).schema
        features = json.loads(schema.metadata[b"huggingface"])["info"]["features"]
        with open(os.path.join(out_dir, "dataset_info.json"), encoding="utf-8") as f:
            info = json.load(f)["features"]
        check(features == info, f"{name}: schema features differ from dataset_info.json")
        check(list(features) == schema.names, f"{name}: features {list(features)} vs columns {schema.names}")
        check(schema.names[0] == key_column, f"{name}: first column {schema.names[0]}")
    rows = per_file if reader == "pyarrow" else datasets_rows(out_dir)
    got = []
    for _, file_rows in rows:
        for row in file_rows:
            got.append((row.pop(key_column), {k: v for k, v in row.items() if v is not None}))
    check(len(got) == len(expected), f"{len(got)} rows, expected {len(expected)}")
    for (key, fields), (want_key, want) in zip(got, expected):
        check(key == want_key, f"key {key!r} where {want_key!r} was expected")
        check({k: as_bytes(v) for k, v in fields.items()} == {k.lower(): as_bytes(v) for k, v in want.items()},
              f"row {key!r}: {str(fields)[:160]} vs {str(want)[:160]}")
    check(root_digest_ok(manifest), "manifest root digest")


def make(root, with_key, plain):
    from datasets import Dataset

    n = 10
    data = {
        "jpg": [bytes([i]) * (i * 37) + b"\xff\x00" for i in range(n)],
        "txt": [f"caption {i} \u00e9" if i % 4 else "" for i in range(n)],
        "label": [i * 1000003 - 5 for i in range(n)],
        "score": [i / 7 if i % 3 else -1.5e-300 for i in range(n)],
        "tags": [[f"t{j}" for j in range(i % 3)] for i in range(n)],
        "meta": [{"w": i, "name": f"n{i}", "ok": i % 2 == 0} for i in range(n)],
    }
    if plain:
        del data["tags"], data["meta"]
    if with_key:
        data["__key__"] = [f"k/{i:03}" for i in range(n)]
    Dataset.from_dict(data).save_to_disk(root, num_shards=3)
    print(f"wrote {root}")


def tar_samples(root):
    samples = {}
    order = []
    for path in sorted(glob.glob(os.path.join(root, "*.tar"))):
        with tarfile.open(path) as tar:
            for member in tar:
                key, field = key_field(member.name)
                if key not in samples:
                    samples[key] = {}
                    order.append(key)
                samples[key][field] = tar.extractfile(member).read()
    return [(k, samples[k]) for k in order]


def same_value(value, data):
    if isinstance(value, bytes):
        return data == value
    if isinstance(value, str):
        return data == value.encode()
    if isinstance(value, bool):
        return data == (b"true" if value else b"false")
    if isinstance(value, int):
        return int(data) == value
    if isinstance(value, float):
        return float(data) == value or (math.isnan(value) and math.isnan(float(data)))
    return json.loads(data) == value


def check_wds(hf_dir, wds_dir):
    from datasets import load_from_disk

    rows = load_from_disk(hf_dir).to_list()
    samples = tar_samples(wds_dir)
    check(len(samples) == len(rows), f"{len(samples)} samples, {len(rows)} rows")
    for i, (row, (key, fields)) in enumerate(zip(rows, samples)):
        want_key = row.pop("__key__", None) or f"{i:09}"
        check(key == want_key, f"row {i}: key {key!r}, expected {want_key!r}")
        check(set(fields) == {k for k, v in row.items() if v is not None}, f"{key}: fields {sorted(fields)} vs {sorted(row)}")
        for name, value in row.items():
            if value is not None:
                check(same_value(value, fields.get(name)), f"{key}.{name}: {fields.get(name)!r:.80} vs {value!r:.80}")


def check_same(a, b):
    from datasets import load_from_disk

    left, right = load_from_disk(a), load_from_disk(b)
    check(left.features == right.features, f"features {left.features} vs {right.features}")
    check(left.to_list() == right.to_list(), "rows differ")


def main():
    args = sys.argv[1:]
    if args[0] == "make":
        make(args[1], "--no-key" not in args, "--plain" in args)
        return
    if args[0] == "wds":
        check_wds(args[1], args[2])
    elif args[0] == "same":
        check_same(args[1], args[2])
    else:
        reader = args[args.index("--reader") + 1] if "--reader" in args else "pyarrow"
        key_column = args[args.index("--key-column") + 1] if "--key-column" in args else "__key__"
        check_output(args[0], args[1], reader, key_column)
    finish()


if __name__ == "__main__":
    main()
