#!/usr/bin/env python3
"""Parquet files other tools write, made with pyarrow (and, where a writer lays a file
out differently from pyarrow, pyarrow's file with its footer rewritten as that writer
writes it: parquet_thrift.py), and pyarrow's verdict on them and on what shardsmith
made of them. The Rust tests (tests/pack/parquet_readers.rs) assert these verdicts beside
shardsmith's.

usage:
  parquet_cases.py readers OUT      files pyarrow reads that other readers got wrong;
                                    prints {file: verdict}
  parquet_cases.py nested OUT       nested columns with nulls and empties
                                    (OUT/nested/nested.parquet), and a map with a key
                                    twice (OUT/dup/dup.parquet); prints their verdicts
  parquet_cases.py keys OUT         train.0.parquet and train.1.parquet, no key column,
                                    and ids/part.{0,1}.parquet with an `id` column that
                                    counts from 0 in each
  parquet_cases.py bomb OUT MIB     a map of two strings of MIB MiB (zstd: a few kB)
  parquet_cases.py encrypted OUT    a file with encrypted columns and footer (in-memory KMS)
  parquet_cases.py verdict FILE...  pyarrow's verdict on each file
  parquet_cases.py same-types IN OUT [IN OUT ...]
                                    compares each OUT (shardsmith's Parquet of the one
                                    file IN) with IN: the Arrow type of every nested
                                    column and every value of every column, by key
  parquet_cases.py wds-json IN KEYCOL WDS_DIR
                                    compares what webdataset reads from WDS_DIR with IN
                                    (every key; nested members json.loads'ed)
  parquet_cases.py mds-json IN KEYCOL MDS_DIR
                                    the same for streaming's LocalDataset and an MDS
                                    output (the rows it holds)
  parquet_cases.py webdataset-keys DIR
                                    the keys webdataset yields from DIR's shards

A verdict is {"ok": true, "rows": N, "types": {column: type}} or {"ok": false,
"error": "..."}.
"""
import base64
import glob
import io
import json
import math
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

import parquet_thrift as T


def verdict(path):
    try:
        table = pq.read_table(path)
        return {"ok": True, "rows": table.num_rows,
                "types": {f.name: str(f.type) for f in table.schema}}
    except Exception as e:  # the verdict is data: any failure of the reader
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def written(table, **options):
    buf = io.BytesIO()
    pq.write_table(table, buf, **options)
    return buf.getvalue()


def dictionary_table(n=60):
    return pa.table({
        "key": [f"k{i:03d}" for i in range(n)],
        "label": [["cat", "dog", "bird"][i % 3] for i in range(n)],
        "score": [float(i % 7) for i in range(n)],
    })


def readers(out):
    os.makedirs(out, exist_ok=True)
    t = dictionary_table()
    files = {
        "dict_on.parquet": written(t, use_dictionary=True),
        "dict_off_v2.parquet": written(t, use_dictionary=False, data_page_version="2.0"),
        "dict_on_v2.parquet": written(t, use_dictionary=True, data_page_version="2.0",
                                      compression="snappy"),
    }
    # A writer that puts the dictionary page first and stores 0 as its offset (the
    # dictionary page is then at the data page offset).
    data = written(t, use_dictionary=True, write_page_index=False)
    meta, _ = T.read_footer(data)
    for cm in T.column_meta(meta):
        if 11 in cm:
            cm[9] = (T.I64, cm[11][1])
            cm[11] = (T.I64, 0)
    files["dict_at_0.parquet"] = T.with_footer(data, meta)
    # parquet-mr 1.2.8: the chunk sizes leave out the dictionary page header.
    meta, _ = T.read_footer(data)
    meta[6] = (T.BINARY, b"parquet-mr version 1.2.8 (build 1234)")
    for cm in T.column_meta(meta):
        if 11 in cm:
            r = T.Reader(data, cm[11][1])
            r.value(T.STRUCT)
            header = r.at - cm[11][1]
            cm[7] = (T.I64, cm[7][1] - header)
            cm[6] = (T.I64, cm[6][1] - header)
    files["parquet_mr_1_2_8.parquet"] = T.with_footer(data, meta)
    # A footer whose row count is 0 though its row groups hold rows (parquet-rs 0.3
    # wrote such footers: parquet-testing's repeated_no_annotation.parquet).
    meta, _ = T.read_footer(data)
    meta[3] = (T.I64, 0)
    files["footer_rows_0.parquet"] = T.with_footer(data, meta)
    # Repeated fields without a LIST annotation (the legacy two-level layout other
    # writers use): `repeated int32 ints`, and `optional group phones { repeated group
    # phone { required int64 number; optional binary kind (STRING) } }` (the layout of
    # parquet-testing's repeated_no_annotation.parquet), from pyarrow's three-level
    # lists whose levels are the same.
    entry = pa.struct([pa.field("number", pa.int64(), False), pa.field("kind", pa.string())])
    phone = pa.list_(pa.field("element", entry, False))
    ints = pa.list_(pa.field("element", pa.int32(), False))
    schema = pa.schema([
        pa.field("key", pa.string()),
        pa.field("ints", ints, False),
        pa.field("phones", pa.struct([pa.field("phone", phone, False)])),
    ])
    legacy = pa.table({
        "key": ["a", "b", "c", "d"],
        "ints": [[1, 2], [], [3], [4, 5, 6]],
        "phones": [{"phone": [{"number": 555, "kind": "home"}]}, None,
                   {"phone": []}, {"phone": [{"number": 1, "kind": None}, {"number": 2, "kind": "x"}]}],
    }, schema=schema)
    data = written(legacy, store_schema=False, use_dictionary=False)
    meta, _ = T.read_footer(data)
    s = meta[2][1][1]
    # root, key, ints (LIST), list, element, phones, phone (LIST), list, element, number, kind
    names = [e[4][1] for e in s]
    assert names == [b"schema", b"key", b"ints", b"list", b"element", b"phones", b"phone",
                     b"list", b"element", b"number", b"kind"], names
    repeated = lambda e: {k: v for k, v in e.items() if k not in (6, 10)} | {3: (T.I32, 2)}
    new = [s[0], s[1],
           {1: s[4][1], 3: (T.I32, 2), 4: (T.BINARY, b"ints")},
           s[5],
           repeated(s[6]) | {5: (T.I32, 2)},
           s[9], s[10]]
    meta[2] = (T.LIST, (T.STRUCT, new))
    for cm in T.column_meta(meta):
        path = cm[3][1][1]
        if path[0] == b"ints":
            path = [b"ints"]
        elif path[0] == b"phones":
            path = [b"phones", b"phone", path[-1]]
        cm[3] = (T.LIST, (T.BINARY, path))
    files["repeated_no_list.parquet"] = T.with_footer(data, meta)
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(json.dumps({name: verdict(os.path.join(out, name)) for name in sorted(files)}))


def nested_table():
    strings = pa.list_(pa.string())
    return pa.table({
        "key": ["r0", "r1", "r2", "r3", "r4", "r5"],
        "tags": pa.array([["a, b"], ["a", "b"], [None], [""], [], None], strings),
        "attrs": pa.array([[("k", 1)], [], None, [("x", None)], [("a", 1), ("b", 2)], [("0", -7)]],
                          pa.map_(pa.string(), pa.int64())),
        "point": pa.array([{"x": 1, "y": "q"}, None, {"x": None, "y": None}, {"x": 2, "y": ""},
                           {"x": 3, "y": "z"}, {"x": -1, "y": "é"}],
                          pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "grid": pa.array([[[1, 2], []], [], None, [None, [3]], [[4]], [[]]], pa.list_(pa.list_(pa.int32()))),
        "blobs": pa.array([[b"\x00\xff"], [b""], None, [None], [], [b"abc"]], pa.list_(pa.binary())),
        "floats": pa.array([[0.1, float("nan")], [float("inf"), -0.0], None, [1e300], [], [None]],
                           pa.list_(pa.float32())),
        "big": pa.array(["x" * 70000, "", None, "y", "z" * 3, "é" * 10], pa.large_string()),
        "ids": pa.array([[(1, "one")], [], None, [], [(2, "two")], [(3, None)]],
                        pa.map_(pa.int32(), pa.string())),
    })


def nested(out):
    for d in ("nested", "dup"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    path = os.path.join(out, "nested", "nested.parquet")
    pq.write_table(nested_table(), path, row_group_size=4)
    # A map with one key twice: pyarrow writes and reads it (as a list of pairs).
    dup = os.path.join(out, "dup", "dup.parquet")
    pq.write_table(pa.table({"key": ["d0", "d1"],
                             "m": pa.array([[("a", 1)], [("k", 1), ("k", 2)]],
                                           pa.map_(pa.string(), pa.int64()))}), dup)
    print(json.dumps({"nested.parquet": verdict(path), "dup.parquet": verdict(dup) |
                      {"values": [list(map(list, v)) for v in pq.read_table(dup).column("m").to_pylist()]}}))


def keys(out):
    os.makedirs(os.path.join(out, "names"), exist_ok=True)
    os.makedirs(os.path.join(out, "ids"), exist_ok=True)
    for part in range(2):
        pq.write_table(pa.table({"text": [f"part {part} row {i}" for i in range(3)]}),
                       os.path.join(out, "names", f"train.{part}.parquet"))
        pq.write_table(pa.table({"id": [f"{i}" for i in range(3)],
                                 "text": [f"part {part} id {i}" for i in range(3)]}),
                       os.path.join(out, "ids", f"part.{part}.parquet"))
    print(json.dumps({f: verdict(f) for f in sorted(glob.glob(os.path.join(out, "*", "*.parquet")))}))


def bomb(out, mib):
    os.makedirs(out, exist_ok=True)
    n = mib << 20
    t = pa.table({"key": ["only"],
                  "m": pa.array([[("a" * n, "b" * n)]], pa.map_(pa.string(), pa.string()))})
    path = os.path.join(out, "bomb.parquet")
    pq.write_table(t, path, compression="zstd", use_dictionary=False, write_statistics=False)
    del t
    v = verdict(path)
    v["bytes"] = os.path.getsize(path)
    print(json.dumps({"bomb.parquet": v}))


def encrypted(out):
    import pyarrow.parquet.encryption as pe

    class Kms(pe.KmsClient):
        def __init__(self, config):
            pe.KmsClient.__init__(self)
            self.keys = config.custom_kms_conf

        def wrap_key(self, key_bytes, master_key_identifier):
            return base64.b64encode(key_bytes).decode()

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return base64.b64decode(wrapped_key)

    config = pe.KmsConnectionConfig(custom_kms_conf={"footer": "0123456789012345", "col": "1234567890123450"})
    factory = pe.CryptoFactory(lambda c: Kms(c))
    os.makedirs(out, exist_ok=True)
    table = dictionary_table(10)
    result = {}
    for name, plaintext in [("encrypted.parquet", False), ("encrypted_plain_footer.parquet", True)]:
        props = pe.EncryptionConfiguration(footer_key="footer", column_keys={"col": ["label"]},
                                           plaintext_footer=plaintext, double_wrapping=False)
        path = os.path.join(out, name)
        with pq.ParquetWriter(path, table.schema,
                              encryption_properties=factory.file_encryption_properties(config, props)) as w:
            w.write_table(table)
        without = verdict(path)
        decryption = factory.file_decryption_properties(config)
        with_keys = pq.read_table(path, decryption_properties=decryption)
        result[name] = {"without_keys": without, "with_keys_rows": with_keys.num_rows}
    print(json.dumps(result))


def as_json(value, kind):
    """A pyarrow value (to_pylist) in the JSON shape shardsmith documents."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {key_text(k, kind.key_type): as_json(v, kind.item_type) for k, v in value}
    if pa.types.is_struct(kind):
        return {f.name: as_json(value[f.name], f.type) for f in kind}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [as_json(v, kind.value_type) for v in value]
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return base64.b64encode(value).decode()
    if pa.types.is_floating(kind):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    return value


def key_text(key, kind):
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return key
    return json.dumps(as_json(key, kind)).strip('"')


def is_nested(kind):
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
            or pa.types.is_map(kind) or pa.types.is_struct(kind))


def same_types(pairs):
    result = {}
    for input_file, out_dir in pairs:
        want = pq.read_table(input_file)
        got = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(out_dir, "*.parquet")))])
        key = "key" if "key" in want.schema.names else None
        problems = []
        for field in want.schema:
            if field.name == key:
                continue
            if field.name.lower() not in got.schema.names:
                problems.append(f"{field.name}: no such column")
                continue
            other = got.schema.field(field.name.lower())
            if is_nested(field.type) and other.type != field.type:
                problems.append(f"{field.name}: type {other.type} where {field.type} was written")
        back_rows = got.to_pylist()
        if key:
            by_key = {r["key"]: r for r in back_rows}
            pairs_of_rows = [(row, by_key.get(row["key"])) for row in want.to_pylist()]
        else:
            pairs_of_rows = list(zip(want.to_pylist(), back_rows))
        if got.num_rows != want.num_rows:
            problems.append(f"{got.num_rows} rows where {want.num_rows} were written")
        for row, back in pairs_of_rows:
            if back is None:
                problems.append(f"row {row.get(key)} is missing")
                continue
            for name, value in row.items():
                if name == key:
                    continue
                kind = want.schema.field(name).type
                a = json.dumps(as_json(value, kind), sort_keys=True)
                b = json.dumps(as_json(back.get(name.lower()), kind), sort_keys=True)
                if a != b:
                    problems.append(f"row {row.get(key)} column {name}: {b[:80]} where {a[:80]} was written")
        result[input_file] = {"rows": got.num_rows, "problems": problems}
    print(json.dumps(result))


def expected_rows(path, key_column):
    table = pq.read_table(path)
    rows = {}
    for row in table.to_pylist():
        key = row.pop(key_column)
        rows[key] = {name: (as_json(value, table.schema.field(name).type), table.schema.field(name).type)
                     for name, value in row.items() if value is not None}
    return rows


def compare(expected, got, what):
    problems = []
    if sorted(expected) != sorted(got):
        problems.append(f"{what} keys {sorted(got)[:10]} where {sorted(expected)[:10]} were written")
    for key, fields in expected.items():
        back = got.get(key, {})
        for name, (value, kind) in fields.items():
            if name not in back:
                problems.append(f"{key}.{name} is missing")
                continue
            raw = back[name]
            if is_nested(kind):
                value_back = json.loads(raw) if isinstance(raw, (bytes, str)) else raw
            elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
                value_back = base64.b64encode(raw).decode()
            else:
                value_back = raw.decode() if isinstance(raw, bytes) else raw
            if json.dumps(value_back, sort_keys=True) != json.dumps(value, sort_keys=True):
                problems.append(f"{key}.{name}: {json.dumps(value_back)[:80]} where {json.dumps(value)[:80]} was written")
    return problems


def wds_json(path, key_column, wds_dir):
    import webdataset as wds
    shards = sorted(glob.glob(os.path.join(wds_dir, "*.tar")))
    got = {}
    for sample in wds.WebDataset(shards, shardshuffle=False):
        key = sample["__key__"]
        got[key] = {k: v for k, v in sample.items() if not k.startswith("__")}
    expected = expected_rows(path, key_column)
    print(json.dumps({"samples": len(got), "problems": compare(expected, got, "webdataset")}))


def mds_json(path, key_column, mds_dir):
    import streaming_shim
    dataset = streaming_shim.load().LocalDataset(local=mds_dir)
    got = {}
    for i in range(len(dataset)):
        sample = dataset[i]
        key = sample.pop("key")
        got[key] = sample
    expected = {k: v for k, v in expected_rows(path, key_column).items() if k in got}
    print(json.dumps({"samples": len(got), "keys": sorted(got),
                      "problems": compare(expected, got, "streaming")}))


def webdataset_keys(directory):
    import webdataset as wds
    shards = sorted(glob.glob(os.path.join(directory, "*.tar")))
    print(json.dumps([[s["__key__"], sorted(k for k in s if not k.startswith("__"))]
                      for s in wds.WebDataset(shards, shardshuffle=False)]))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "readers":
        readers(args[0])
    elif command == "nested":
        nested(args[0])
    elif command == "keys":
        keys(args[0])
    elif command == "bomb":
        bomb(args[0], int(args[1]))
    elif command == "encrypted":
        encrypted(args[0])
    elif command == "verdict":
        print(json.dumps({f: verdict(f) for f in args}))
    elif command == "same-types":
        same_types(list(zip(args[::2], args[1::2])))
    elif command == "wds-json":
        wds_json(*args)
    elif command == "mds-json":
        mds_json(*args)
    elif command == "webdataset-keys":
        webdataset_keys(args[0])
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
