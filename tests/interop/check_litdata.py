#!/usr/bin/env python3
"""Checks shardsmith's LitData output and input against the real litdata 0.2.76.

usage: check_litdata.py INPUT_DIR OUT_DIR
           OUT_DIR (`pack INPUT_DIR OUT_DIR --format litdata`) read by
           litdata.StreamingDataset: every item is {"__key__": key, FIELD: value} with
           the keys and fields of INPUT_DIR's files (webdataset grouping rule), in key
           order, text fields by their name (json, txt, ...) a `str` equal to the
           file's text, the others `bytes` equal to its bytes;
       check_litdata.py make DIR
           writes DIR with litdata.optimize: 23 items of bytes, str, int, float, 1-D and
           2-D numpy arrays and PIL images (RGB and L), several chunks;
       check_litdata.py make-plain DIR
           writes DIR with litdata.optimize: 60 items whose values are only bytes, str,
           int, float, bool and a dict of int and str, several chunks; litdata 0.2.76
           keeps such items only in each chunk's Arrow IPC footer (checked);
       check_litdata.py make-zstd WRAP DIR
           writes DIR with litdata.optimize(compression="zstd"), several small chunks:
           WRAP `footer`, the items of make-plain (kept in Arrow footers written with
           IPC zstd: ipc_compression "zstd", checked), or `chunk` / `batch` / `sample`,
           the items of make as compression_level says (whole `.zstd:3.bin` files,
           LDFZ01 framed files of 2 items a frame, an item a zstd frame; checked);
       check_litdata.py wds LITDATA_DIR WDS_DIR
           WDS_DIR (`pack LITDATA_DIR WDS_DIR`) holds every item of LITDATA_DIR, read by
           StreamingDataset, as the fields shardsmith documents: bytes and str as they
           are, int and float as decimal text of the same value, numpy arrays as .npy
           files of the same dtype, shape and values, PIL images as PNGs of the same
           mode, size and pixels, a dict's values as the fields of their paths
           (`meta.a`);
       check_litdata.py same A B
           StreamingDataset yields the same items (keys, values and types) from A and B.
Run by the readers' env (the conformance test) it re-runs itself in the torch env
(SHARDSMITH_TORCH_PYTHON), which holds litdata and torch. Prints "N passed, M failed";
exits 1 on failure.
"""
import io
import json
import os
import sys
import tarfile
import tempfile

from common import check, finish, raw_samples


try:
    import litdata  # noqa: F401
except ImportError:
    torch_python = os.environ.get("SHARDSMITH_TORCH_PYTHON")
    if not torch_python:
        check(False, "litdata is not importable here and SHARDSMITH_TORCH_PYTHON is not set")
        finish()
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)), OMP_NUM_THREADS="1")
    os.execve(torch_python, [torch_python, os.path.abspath(__file__), *sys.argv[1:]], env)

import numpy as np
from litdata import StreamingDataset


# Fields stored as `str` by default: text by their name (`Encoding::for_field`); every
# other field is `bytes`.
TEXT = {"json", "txt", "text", "md", "caption", "csv", "tsv", "html", "xml", "yaml", "yml"}


def items(path):
    """Every item StreamingDataset yields for `path`, in order, bytes as bytes."""
    out = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ.setdefault("LITDATA_CACHE_DIR", cache)
        for item in StreamingDataset(path):
            out.append({k: bytes(v) if isinstance(v, memoryview) else v for k, v in item.items()})
    return out


def read_ours(input_dir, out_dir):
    expected = raw_samples(input_dir)
    got = items(out_dir)
    check(len(got) == len(expected), f"{len(got)} items, {len(expected)} samples")
    for (key, fields), item in zip(expected, got):
        check(item.get("__key__") == key, f"key {item.get('__key__')!r}, expected {key!r}")
        check(sorted(k for k in item if k != "__key__") == sorted(fields), f"{key}: fields {sorted(item)}")
        for field, data in fields.items():
            value = item.get(field)
            if field.rsplit(".", 1)[-1] in TEXT:
                check(isinstance(value, str) and value == data.decode(), f"{key}.{field}: not the same str ({type(value)})")
            else:
                check(isinstance(value, bytes) and value == data, f"{key}.{field}: not the same bytes ({type(value)})")


def made_item(i):
    """Item `i` of `make`: every common serializer (module level: optimize pickles it)."""
    from PIL import Image

    return {
        "__key__": f"item-{i:03}",
        "raw": bytes(range(i % 7, i % 7 + 40 + i)),
        "text": f"caption {i}: h\u00e9llo",
        "n": i * 1_000_003 - 7,
        "f": i / 7 - 1e-5 if i % 3 else 1.5e300 * i,
        "vec": np.arange(i + 1, dtype=np.float32) / 3,
        "grid": (np.arange(6, dtype=np.int64).reshape(2, 3) * (i + 1)),
        "rgb": Image.new("RGB", (5 + i % 3, 4), (i * 9 % 256, 30, 200)),
        "grey": Image.new("L", (3, 2 + i % 2), i * 11 % 256),
    }


def make(out_dir):
    litdata.optimize(made_item, list(range(23)), out_dir, chunk_bytes=2000, num_workers=1)
    chunks = [n for n in os.listdir(out_dir) if n.endswith(".bin")]
    check(os.path.exists(os.path.join(out_dir, "index.json")) and len(chunks) > 2, f"made {out_dir}: {chunks}")


def plain_item(i):
    """Item `i` of `make-plain`: values litdata 0.2.76 writes to the Arrow footer."""
    return {
        "__key__": f"plain-{i:03}",
        "jpg": bytes(range(i % 5, i % 5 + 3 * i)),
        "json": f'{{"i": {i}, "s": "h\u00e9llo"}}',
        "txt": "" if i % 4 == 0 else f"line {i} \u2603" * (i % 9),
        "n": (-1) ** i * i * 10_000_000_019,
        "f": [0.1 * i, 1.5e300, -2.5e-7, float(i)][i % 4],
        "ok": i % 3 == 0,
        "meta": {"a": i * 7, "b": f"b{i}"},
    }


def make_plain(out_dir):
    litdata.optimize(plain_item, list(range(60)), out_dir, chunk_size=16, num_workers=1)
    chunks = sorted(n for n in os.listdir(out_dir) if n.endswith(".bin"))
    check(len(chunks) > 2, f"made {out_dir}: {chunks}")
    for name in chunks:
        with open(os.path.join(out_dir, name), "rb") as f:
            data = f.read()
        n = int.from_bytes(data[:4], "little")
        offsets = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "little") for i in range(n + 1)]
        check(data.endswith(b"LDARW01\0") and offsets[0] == offsets[-1],
              f"{name}: not items kept only in an Arrow footer")


def make_zstd(wrap, out_dir):
    """A dataset optimize wrote with compression="zstd" the `wrap` way (small: 12 items)."""
    if wrap == "footer":
        litdata.optimize(plain_item, list(range(12)), out_dir, chunk_size=4, num_workers=1, compression="zstd")
    else:
        litdata.optimize(made_item, list(range(12)), out_dir, chunk_size=4, num_workers=1,
                         compression="zstd:3" if wrap == "chunk" else "zstd", compression_level=wrap,
                         compression_batch_size=2 if wrap == "batch" else None)
    with open(os.path.join(out_dir, "index.json")) as f:
        index = json.load(f)
    config = index["config"]
    said = {k: config.get(k) for k in ("compression", "compression_level", "ipc_compression")}
    want = {
        "footer": {"compression": None, "compression_level": None, "ipc_compression": "zstd"},
        "chunk": {"compression": "zstd:3", "compression_level": None, "ipc_compression": None},
        "batch": {"compression": "zstd", "compression_level": "batch", "ipc_compression": None},
        "sample": {"compression": "zstd", "compression_level": "sample", "ipc_compression": None},
    }[wrap]
    check(said == want, f"{wrap}: config {said}")
    names = [c["filename"] for c in index["chunks"]]
    check(len(names) == 3, f"{wrap}: chunks {names}")
    for entry in index["chunks"]:
        with open(os.path.join(out_dir, entry["filename"]), "rb") as f:
            data = f.read()
        name = entry["filename"]
        if wrap == "footer":
            offsets = int.from_bytes(data[4:8], "little"), int.from_bytes(data[20:24], "little")
            check(data.endswith(b"LDARW01\0") and offsets[0] == offsets[1] and len(data) == entry["chunk_bytes"],
                  f"{name}: not items kept only in an Arrow footer")
        elif wrap == "chunk":
            check(name.endswith(".zstd:3.bin") and data.startswith(b"\x28\xb5\x2f\xfd"), f"{name}: not whole zstd")
            check(entry["chunk_bytes"] > len(data), f"{name}: chunk_bytes {entry['chunk_bytes']}, {len(data)} on disk")
        elif wrap == "batch":
            check(data.startswith(b"LDFZ01\0\0") and int.from_bytes(data[20:24], "little") == 2,
                  f"{name}: not 2 LDFZ01 frames")
            check(entry["chunk_bytes"] == len(data), f"{name}: chunk_bytes {entry['chunk_bytes']}")
        else:
            first = int.from_bytes(data[4:8], "little")
            check(data[first:first + 4] == b"\x28\xb5\x2f\xfd", f"{name}: item 0 is no zstd frame")
            check(entry["chunk_bytes"] == len(data), f"{name}: chunk_bytes {entry['chunk_bytes']}")


def nested_item(i):
    """Item `i` of `make-nested`: list values (litdata's `json` leaves) of every shape the
    nested encoding has, kept in the Arrow footer."""
    return {
        "__key__": f"nested-{i:03}",
        "tags": [f"t\u00e9{j}" for j in range(i % 4)],
        "ids": [i * 1_000_000_007 - j for j in range(i % 5)],
        "scores": [0.1 * i, -2.5e-7, 1.5e300 * i][: i % 4],
        "box": {"w": i, "h": [i, i + 1, 3 * i]},
        "txt": f"t{i}",
    }


def nested_pytree_item(i):
    """Item `i` of `make-nested-pytree`: `nested_item(i)` and a numpy array, which keeps
    the items out of the Arrow footer."""
    return {**nested_item(i), "vec": np.arange(i % 3 + 1, dtype=np.int16)}


def make_nested(pytree, out_dir):
    fn = nested_pytree_item if pytree else nested_item
    litdata.optimize(fn, list(range(20)), out_dir, chunk_size=6, num_workers=1)
    with open(os.path.join(out_dir, "index.json")) as f:
        config = json.load(f)["config"]
    check(config["data_format"].count("json") == 4, f"data_format {config['data_format']}")
    chunks = sorted(n for n in os.listdir(out_dir) if n.endswith(".bin"))
    check(len(chunks) > 2, f"made {out_dir}: {chunks}")
    for name in chunks:
        with open(os.path.join(out_dir, name), "rb") as f:
            data = f.read()
        n = int.from_bytes(data[:4], "little")
        offsets = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "little") for i in range(n + 1)]
        footer = data.endswith(b"LDARW01\0") and offsets[0] == offsets[-1]
        check(footer != pytree, f"{name}: items {'in' if footer else 'not in'} an Arrow footer")


def flat(item, prefix=""):
    """A dict's values by path (`meta.a`), as the input names a nested dict's leaves."""
    out = {}
    for k, v in item.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def wds(lit_dir, wds_dir):
    from PIL import Image

    samples = {}
    for name in sorted(os.listdir(wds_dir)):
        if name.endswith(".tar"):
            with tarfile.open(os.path.join(wds_dir, name)) as tar:
                for member in tar.getmembers():
                    key, _, field = member.name.partition(".")
                    samples.setdefault(key, {})[field] = tar.extractfile(member).read()
    got = items(lit_dir)
    check(len(got) >= 12 and len(got) == len(samples), f"{len(got)} items, {len(samples)} samples")
    chunks = [n for n in os.listdir(lit_dir) if n.endswith(".bin")]
    check(len(chunks) > 2, f"several chunks: {chunks}")
    for item in got:
        item = flat(item)
        key = item["__key__"]
        fields = samples.get(key, {})
        check(sorted(fields) == sorted(k for k in item if k != "__key__"), f"{key}: fields {sorted(fields)}")
        for field, value in item.items():
            if field == "__key__" or field not in fields:
                continue
            data = fields[field]
            where = f"{key}.{field}"
            if isinstance(value, bytes):
                check(data == value, f"{where}: bytes differ")
            elif isinstance(value, str):
                check(data == value.encode(), f"{where}: str differs")
            elif isinstance(value, bool):
                check(data == (b"true" if value else b"false"), f"{where}: {data!r} for {value}")
            elif isinstance(value, int):
                check(int(data) == value, f"{where}: {data!r} for {value}")
            elif isinstance(value, float):
                check(float(data) == value, f"{where}: {data!r} for {value!r}")
            elif isinstance(value, list):
                check(json.loads(data) == value and type(json.loads(data)) is list, f"{where}: {data!r} for {value!r}")
                for x, y in zip(json.loads(data), value):
                    check(type(x) is type(y), f"{where}: {x!r} for {y!r}")
            elif isinstance(value, np.ndarray):
                array = np.load(io.BytesIO(data))
                check(array.dtype == value.dtype and array.shape == value.shape and np.array_equal(array, value),
                      f"{where}: {array.dtype}{array.shape} for {value.dtype}{value.shape}")
            elif isinstance(value, Image.Image):
                check(data.startswith(b"\x89PNG"), f"{where}: not a PNG")
                image = Image.open(io.BytesIO(data))
                check((image.mode, image.size) == (value.mode, value.size), f"{where}: {image.mode} {image.size}")
                check(image.tobytes() == value.tobytes(), f"{where}: pixels differ")
            else:
                check(False, f"{where}: a {type(value)} the check does not know")


def same(a, b):
    left, right = items(a), items(b)
    check(len(left) == len(right) and len(left) > 0, f"{len(left)} and {len(right)} items")
    for x, y in zip(left, right):
        differ = sorted(k for k in set(x) | set(y) if k not in x or k not in y or x[k] != y[k] or type(x[k]) is not type(y[k]))
        check(not differ, f"item {x.get('__key__')!r} / {y.get('__key__')!r}: {differ} differ")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["make"]:
        make(args[1])
    elif args[:1] == ["make-plain"]:
        make_plain(args[1])
    elif args[:1] == ["make-zstd"]:
        make_zstd(args[1], args[2])
    elif args[:1] == ["make-nested"]:
        make_nested(False, args[1])
    elif args[:1] == ["make-nested-pytree"]:
        make_nested(True, args[1])
    elif args[:1] == ["wds"]:
        wds(args[1], args[2])
    elif args[:1] == ["same"]:
        same(args[1], args[2])
    else:
        read_ours(args[0], args[1])
    finish()
