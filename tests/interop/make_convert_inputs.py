#!/usr/bin/env python3
"""Writes the inputs of the conversion interop tests with the real tools, not shardsmith.

usage: make_convert_inputs.py OUT_DIR
Needs PYTHONPATH to include tests/interop/torchstub and tests/interop (streaming).

A deterministic corpus of 40 samples (non-ASCII and directory-like keys; fields jpg
(JPEG markers around noise), txt (UTF-8, three empty), json, cls (an integer as text),
bin (noise, empty in every fourth sample)) is written as:
  wds_plain/   webdataset.ShardWriter, maxcount 15: 3 .tar shards (PAX records for the
               non-ASCII keys, as Python's tarfile writes them)
  wds_gz/      webdataset.ShardWriter into .tar.gz names (gzip-compressed)
  gnu_tar/     GNU tar: shard-000000.tar --format=gnu (plus a sample whose member names
               are over 100 bytes: GNU ././@LongLink records), shard-000001.tar
               --format=pax (plus a sample with a long non-ASCII name: PAX path records)
  mds_<c>/     streaming.MDSWriter with compression c (none, zstd, zstd:7, gz, bz2, br,
               snappy); columns key:str jpg:bytes txt:str json:json cls:int bin:bytes
  mds_nokey/   MDSWriter (zstd) without a key column: keys are the sample indices, 9 digits
  mds_merged/  three MDSWriter parts (none, zstd, gz) in 0/ 1/ 2/, merged by streaming's
               merge_index into the root index.json
  mds_typed/   MDSWriter, columns of every other encoding: int8, uint16, int32, uint64,
               float16, float32, float64, str_int, str_float, str_decimal, png, jpeg,
               ndarray (dtype and shape per sample), ndarray:int16 (static dtype),
               ndarray:float32:2,3 (static dtype and shape)
and expected.json: {input: {"samples": [{"key": K, "fields": {F: {"kind": KIND, "b64":
BYTES}}}], "encodings": {F: MDS encoding} (MDS inputs)}} with the samples in the order
the input's reader yields them. BYTES are a field's bytes as a WebDataset member would
hold them (shardsmith's raw-file form of the value): stored bytes for bytes/str/json/
str_*/png/jpeg, decimal text for integers, text for floats (compared as numbers of the
kind's width), a .npy file (np.save) for ndarrays (compared as arrays).

Every input is read back here with its real reader (webdataset.WebDataset,
StreamingDataset) and compared with the corpus before expected.json is written, so the
expectations are what the readers yield. Prints what it wrote; exits 1 on a mismatch.
"""
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import streaming_shim

COMPRESSIONS = ["none", "zstd", "zstd:7", "gz", "bz2", "br", "snappy"]
CORE_COLUMNS = {"key": "str", "jpg": "bytes", "txt": "str", "json": "json", "cls": "int", "bin": "bytes"}
KIND = {"jpg": "bytes", "txt": "str", "json": "json", "cls": "int", "bin": "bytes"}


def rng_bytes(seed, n):
    out, x = bytearray(), (seed * 2654435761 + 12345) & 0xFFFFFFFF
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append((x >> 16) & 0xFF)
    return bytes(out)


def corpus():
    """40 samples: (key, {field: bytes}), in writing order."""
    keys = []
    for i in range(40):
        if i == 0:
            keys.append("café/ü-1")
        elif i == 1:
            keys.append("train/猫/κλειδί-2")
        elif i == 2:
            keys.append("dots.in.dir/sample 3")
        elif i % 3 == 0:
            keys.append(f"train/cat/{i:04d}")
        elif i % 3 == 1:
            keys.append(f"val/dog/{i:04d}")
        else:
            keys.append(f"s{i:04d}")
    samples = []
    for i, key in enumerate(keys):
        jpg = b"\xff\xd8\xff\xe0" + rng_bytes(i, 37 * i + 5) + b"\xff\xd9"
        blob = b"" if i % 4 == 1 else rng_bytes(1000 + i, 3 * i)
        txt = b"" if i in (4, 5, 23) else f"caption {i}: ünïcødé ✓ {'word ' * (i % 5)}".encode()
        meta = {"i": i, "name": key, "tags": ["a", "ü"][: i % 3], "score": i / 8}
        js = json.dumps(meta, ensure_ascii=i % 2 == 0).encode()
        cls = str((i * 7) % 11 - 3).encode()
        samples.append((key, {"jpg": jpg, "txt": txt, "json": js, "cls": cls, "bin": blob}))
    return samples


def long_samples():
    """Two extra samples for the GNU tar input: member names over 100 bytes."""
    gnu_key = "long/" + "x" * 60 + "/" + "y" * 50 + "/gnu-long"
    pax_key = "lång/" + "ünïcødé-κλειδί-" * 6 + "/pax-long"
    out = []
    for n, key in enumerate([gnu_key, pax_key]):
        assert len((key + ".json").encode()) > 100
        out.append((key, {"jpg": b"\xff\xd8\xff\xe0" + rng_bytes(100 + n, 300) + b"\xff\xd9", "txt": f"long {n}".encode(),
                          "json": json.dumps({"long": n}).encode(), "cls": str(n).encode(), "bin": b""}))
    return out


def field(kind, data):
    return {"kind": kind, "b64": base64.b64encode(data).decode()}


def core_expected(samples):
    return [{"key": k, "fields": {f: field(KIND[f], v) for f, v in fields.items()}} for k, fields in samples]


def npy(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def typed_samples():
    """(key, {column: value for MDSWriter}, {column: (kind, raw bytes)})."""
    from PIL import Image
    out = []
    for i in range(12):
        png_buf, jpeg_buf = io.BytesIO(), io.BytesIO()
        img = Image.frombytes("RGB", (4, 3), rng_bytes(500 + i, 36))
        img.save(png_buf, format="PNG")
        img.save(jpeg_buf, format="JPEG", quality=90)
        f16 = np.float16([0.5, -2.25, 65504.0, 1e-3, 0.1][i % 5])
        f32 = np.float32([0.1, -1.5, 3.4028235e38, 1e-30, 2.0 / 3][i % 5])
        f64 = [0.1, -1.5, 1e308, 5e-324, 2.0 / 3, 1.0][i % 6]
        arr = np.arange(i + 1, dtype=[np.uint8, np.int32, np.float64, np.int64][i % 4]).reshape(
            [(i + 1,), (1, i + 1)][i % 2]) * (i + 1)
        arr16 = (np.arange(2 * (i % 3 + 1), dtype=np.int16) - 3).reshape(2, i % 3 + 1)
        arrf = (np.arange(6, dtype=np.float32) / (i + 3)).reshape(2, 3)
        sint, sfloat, sdec = str(i * 1000 - 5000), repr(i / 7), f"{i}.{i:03d}"
        values = {
            "key": f"typed/{i:03d}",
            "i8": np.int8(-128 + i * 21), "u16": np.uint16(65535 - i * 999), "i32": np.int32(-(2 ** 31) + i),
            "u64": np.uint64(2 ** 64 - 1 - i), "f16": f16, "f32": f32, "f64": np.float64(f64),
            "sint": sint.encode(), "sfloat": sfloat.encode(), "sdec": sdec.encode(),
            "png": png_buf.getvalue(), "jpeg": jpeg_buf.getvalue(),
            "arr": arr, "arr16": arr16, "arrf": arrf,
        }
        raw = {
            "i8": ("int8", str(int(values["i8"])).encode()), "u16": ("uint16", str(int(values["u16"])).encode()),
            "i32": ("int32", str(int(values["i32"])).encode()), "u64": ("uint64", str(int(values["u64"])).encode()),
            "f16": ("float16", repr(float(f16)).encode()), "f32": ("float32", repr(float(f32)).encode()),
            "f64": ("float64", repr(f64).encode()),
            "sint": ("str_int", sint.encode()), "sfloat": ("str_float", sfloat.encode()), "sdec": ("str_decimal", sdec.encode()),
            "png": ("png", png_buf.getvalue()), "jpeg": ("jpeg", jpeg_buf.getvalue()),
            "arr": ("ndarray", npy(arr)), "arr16": ("ndarray", npy(arr16)), "arrf": ("ndarray", npy(arrf)),
        }
        out.append((values["key"], values, raw))
    return out


TYPED_COLUMNS = {"key": "str", "i8": "int8", "u16": "uint16", "i32": "int32", "u64": "uint64", "f16": "float16",
                 "f32": "float32", "f64": "float64", "sint": "str_int", "sfloat": "str_float", "sdec": "str_decimal",
                 "png": "png", "jpeg": "jpeg", "arr": "ndarray", "arr16": "ndarray:int16",
                 "arrf": "ndarray:float32:2,3"}


def mds_row(key, fields):
    """MDSWriter values of a core sample: bytes pass through MDSWriter unchanged (json
    too, so the stored JSON text is the corpus's), str as str, cls as a Python int."""
    return {"key": key, "jpg": fields["jpg"], "txt": fields["txt"].decode(), "json": fields["json"],
            "cls": int(fields["cls"]), "bin": fields["bin"]}


# ---- reading back with the real readers --------------------------------------------

import check_convert  # noqa: E402  (the comparison rules are the checker's)


def read_wds(paths):
    import webdataset as wds
    out = []
    for sample in wds.WebDataset(paths, shardshuffle=False, empty_check=True):
        out.append((sample["__key__"], {k: v for k, v in sample.items() if not k.startswith("__")}))
    return out


def read_mds(s, root):
    return check_convert.streaming_rows(s, root, "xxh64")


def verify(name, expected, got_samples, encodings=None):
    """got_samples: [(key, {field: reader value})]; compared with the checker's rules."""
    errors = []
    if [k for k, _ in got_samples] != [e["key"] for e in expected]:
        errors.append(f"{name}: keys/order differ: {[k for k, _ in got_samples][:5]} vs {[e['key'] for e in expected][:5]}")
    for (key, got), want in zip(got_samples, expected):
        if set(got) != set(want["fields"]):
            errors.append(f"{name}: {key!r} fields {sorted(got)} vs {sorted(want['fields'])}")
            continue
        for f, w in want["fields"].items():
            problem = check_convert.compare(got[f], w, encodings and encodings[f])
            if problem:
                errors.append(f"{name}: {key!r} field {f}: {problem}")
    for e in errors[:10]:
        print("MISMATCH:", e)
    if errors:
        sys.exit(1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    s = streaming_shim.load()
    import webdataset as wds
    samples = corpus()
    expected = {}

    # webdataset ShardWriter, plain and gzip-compressed
    for name, suffix in (("wds_plain", "tar"), ("wds_gz", "tar.gz")):
        d = os.path.join(out, name)
        os.makedirs(d)
        with wds.ShardWriter(os.path.join(d, f"shard-%06d.{suffix}"), maxcount=15, verbose=0) as w:
            for key, fields in samples:
                w.write({"__key__": key, **fields})
        shards = sorted(os.path.join(d, p) for p in os.listdir(d))
        assert len(shards) == 3, shards
        expected[name] = {"samples": core_expected(samples)}
        verify(name, expected[name]["samples"], read_wds(shards))

    # GNU tar: --format=gnu with a GNU long name, --format=pax with a long non-ASCII name
    d = os.path.join(out, "gnu_tar")
    os.makedirs(d)
    longs = long_samples()
    parts = [samples[:20] + longs[:1], samples[20:] + longs[1:]]
    with tempfile.TemporaryDirectory() as stage:
        for n, (part, fmt) in enumerate(zip(parts, ["gnu", "pax"])):
            members = []
            for key, fields in part:
                for f, data in fields.items():
                    rel = f"{key}.{f}"
                    os.makedirs(os.path.dirname(os.path.join(stage, rel)) or stage, exist_ok=True)
                    with open(os.path.join(stage, rel), "wb") as fh:
                        fh.write(data)
                    members.append(rel)
            subprocess.run(["tar", f"--format={fmt}", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0",
                            "-cf", os.path.abspath(os.path.join(d, f"shard-{n:06d}.tar")), "-C", stage,
                            "--no-recursion", "--null", "-T", "-"],
                           input=b"\0".join(m.encode() for m in members), check=True)
    gnu0 = open(os.path.join(d, "shard-000000.tar"), "rb").read()
    pax1 = open(os.path.join(d, "shard-000001.tar"), "rb").read()
    assert b"././@LongLink" in gnu0, "GNU tar wrote no long-name record"
    assert b" path=" in pax1 and "ünïcødé".encode() in pax1, "GNU tar wrote no PAX path record"
    gnu_samples = parts[0] + parts[1]
    expected["gnu_tar"] = {"samples": core_expected(gnu_samples)}
    verify("gnu_tar", expected["gnu_tar"]["samples"],
           read_wds([os.path.join(d, "shard-000000.tar"), os.path.join(d, "shard-000001.tar")]))

    # MDSWriter, every compression
    core_encodings = {f: e for f, e in CORE_COLUMNS.items() if f != "key"}
    for c in COMPRESSIONS:
        name = "mds_" + c.replace(":", "")
        d = os.path.join(out, name)
        with s.MDSWriter(out=d, columns=CORE_COLUMNS, compression=None if c == "none" else c, hashes=["xxh64"],
                         size_limit=1 << 12, progress_bar=False) as w:
            for key, fields in samples:
                w.write(mds_row(key, fields))
        index = json.load(open(os.path.join(d, "index.json")))
        assert len(index["shards"]) >= 3, f"{name}: {len(index['shards'])} shards"
        expected[name] = {"samples": core_expected(samples), "encodings": core_encodings}
        rows = read_mds(s, d)
        verify(name, expected[name]["samples"], [(r["key"], {f: r[f] for f in core_encodings}) for r in rows],
               core_encodings)

    # no key column: the key is the sample's index in the dataset, 9 digits
    d = os.path.join(out, "mds_nokey")
    no_key = {f: e for f, e in CORE_COLUMNS.items() if f != "key"}
    with s.MDSWriter(out=d, columns=no_key, compression="zstd", hashes=["xxh64"], size_limit=1 << 12,
                     progress_bar=False) as w:
        for key, fields in samples:
            row = mds_row(key, fields)
            del row["key"]
            w.write(row)
    expected["mds_nokey"] = {"samples": core_expected([(f"{i:09d}", f) for i, (_, f) in enumerate(samples)]),
                             "encodings": core_encodings}
    rows = read_mds(s, d)
    verify("mds_nokey", expected["mds_nokey"]["samples"], [(f"{i:09d}", r) for i, r in enumerate(rows)], core_encodings)

    # merged parts
    d = os.path.join(out, "mds_merged")
    os.makedirs(d)
    for n, (part, c) in enumerate(zip([samples[:13], samples[13:27], samples[27:]], [None, "zstd", "gz"])):
        with s.MDSWriter(out=os.path.join(d, str(n)), columns=CORE_COLUMNS, compression=c, hashes=["xxh64"],
                         size_limit=1 << 12, progress_bar=False) as w:
            for key, fields in part:
                w.write(mds_row(key, fields))
    s.merge_index([os.path.join(d, str(n), "index.json") for n in range(3)], d, keep_local=True)
    index = json.load(open(os.path.join(d, "index.json")))
    assert all("/" in (e["zip_data"] or e["raw_data"])["basename"] for e in index["shards"]), index["shards"][0]
    expected["mds_merged"] = {"samples": core_expected(samples), "encodings": core_encodings}
    rows = read_mds(s, d)
    verify("mds_merged", expected["mds_merged"]["samples"], [(r["key"], {f: r[f] for f in core_encodings}) for r in rows],
               core_encodings)

    # every other encoding
    d = os.path.join(out, "mds_typed")
    typed = typed_samples()
    with s.MDSWriter(out=d, columns=TYPED_COLUMNS, compression="zstd", hashes=["xxh64"], size_limit=1 << 12,
                     progress_bar=False) as w:
        for _, values, _ in typed:
            w.write(values)
    typed_encodings = {f: e for f, e in TYPED_COLUMNS.items() if f != "key"}
    expected["mds_typed"] = {
        "samples": [{"key": k, "fields": {f: field(kind, data) for f, (kind, data) in raw.items()}} for k, _, raw in typed],
        "encodings": typed_encodings,
    }
    rows = read_mds(s, d)
    verify("mds_typed", expected["mds_typed"]["samples"], [(r["key"], {f: r[f] for f in typed_encodings}) for r in rows],
           typed_encodings)

    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1, sort_keys=True)
    for name, e in expected.items():
        print(f"{name}: {len(e['samples'])} samples")


if __name__ == "__main__":
    main()
