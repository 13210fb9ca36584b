#!/usr/bin/env python3
"""Reads shardsmith WebDataset shards with the real readers and compares them with the
raw input, byte for byte.

usage: check_webdataset.py INPUT_DIR SHARD_DIR
Needs PYTHONPATH to include tests/interop/torchstub (wids imports torch at module level).
Prints one line per failed check and a final "N passed, M failed"; exits 1 on failure.

Checks:
  1. Every input file is either in a shard (as key.field) or listed under "skipped"
     in manifest.json with a reason: nothing is silently lost.
  2. webdataset.WebDataset yields exactly the expected samples, keys, fields and bytes,
     per shard in manifest order, with __url__ equal to the shard path.
  3. wids.IndexedTarSamples and wids.ShardListDataset see the same samples and bytes.
  4. Every member is a plain ustar regular file: name <= 100 bytes, empty prefix, no PAX
     records, mode 0444, mtime 0, owner bigdata; the archive ends with two zero blocks.
  5. manifest.json: file sizes and SHA-256 match, totals add up, the root digest
     recomputed here (canonical JSON) matches, and `sha256sum -c SHA256SUMS` passes.
"""
import json
import os
import sys
import tarfile
import tempfile

from common import check, check_sha256sums, finish, load_manifest, read_bytes, root_digest_ok, sha256


def expected_samples(input_dir, skipped):
    """key -> {field: bytes}, by the webdataset rule: key = path up to the first dot of
    the basename, field = the rest, lowercased."""
    samples = {}
    for root, _, files in os.walk(input_dir):
        for name in files:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, input_dir).replace(os.sep, "/")
            if rel in skipped:
                continue
            head, _, base = rel.rpartition("/")
            stem, dot, ext = base.partition(".")
            check(dot == "." and stem != "", f"{rel}: packed although it has no key/extension")
            key = f"{head}/{stem}" if head else stem
            with open(full, "rb") as f:
                samples.setdefault(key, {})[ext.lower()] = f.read()
    return samples


def wids_fields(sample):
    """wids returns each field as a BytesIO under `.ext`."""
    return {k[1:]: (v.getvalue() if hasattr(v, "getvalue") else v) for k, v in sample.items() if k.startswith(".")}


def main():
    input_dir, shard_dir = sys.argv[1], sys.argv[2]
    manifest = load_manifest(shard_dir)
    skipped = {s["path"]: s["reason"] for s in manifest.get("skipped", [])}
    for path, reason in skipped.items():
        check(bool(reason), f"{path}: skipped without a reason")
        check(os.path.exists(os.path.join(input_dir, path)) or os.path.islink(os.path.join(input_dir, path)),
              f"{path}: skipped entry does not name an input file")
    expected = expected_samples(input_dir, skipped)
    shards = [os.path.join(shard_dir, e["path"]) for e in manifest["files"]]

    # 5. manifest consistency and root digest
    check(root_digest_ok(manifest), "root digest differs from Python's canonical JSON")
    total = 0
    for entry, path in zip(manifest["files"], shards):
        data = read_bytes(path)
        check(len(data) == entry["size"], f"{path}: size differs from manifest")
        check(sha256(data) == entry["sha256"], f"{path}: sha256 differs from manifest")
        total += entry["samples"]
    check(manifest["totals"]["samples"] == total == len(expected),
          f"sample totals: manifest {manifest['totals']['samples']}, shards {total}, expected {len(expected)}")
    check_sha256sums(shard_dir)

    # 2. webdataset
    import webdataset as wds
    seen = {}
    order = []
    dataset = wds.WebDataset(shards, shardshuffle=False, empty_check=True)
    for sample in dataset:
        key = sample["__key__"]
        check(key not in seen, f"webdataset: key {key!r} seen twice")
        fields = {k: v for k, v in sample.items() if not k.startswith("__")}
        seen[key] = fields
        order.append((sample["__url__"], key))
    check(set(seen) == set(expected), f"webdataset keys differ: missing {sorted(set(expected) - set(seen))[:5]}, "
          f"extra {sorted(set(seen) - set(expected))[:5]}")
    for key, fields in expected.items():
        got = seen.get(key, {})
        check(got == fields, f"webdataset: sample {key!r} differs (fields {sorted(got)} vs {sorted(fields)})")
    for entry, path in zip(manifest["files"], shards):
        keys = [k for url, k in order if url == path]
        check(len(keys) == entry["samples"], f"{path}: webdataset read {len(keys)} samples, manifest says {entry['samples']}")
        if keys:
            check(keys[0] == entry["first_key"] and keys[-1] == entry["last_key"], f"{path}: first/last key differ")

    # 3. wids
    import wids
    index = {"__kind__": "wids-shard-index-v1", "wids_version": 1, "name": "shardsmith",
             "shardlist": [{"url": os.path.abspath(p), "nsamples": e["samples"]} for p, e in zip(shards, manifest["files"])]}
    wids_count = 0
    for entry, path in zip(manifest["files"], shards):
        indexed = wids.wids.IndexedTarSamples(path=path)
        check(len(indexed) == entry["samples"], f"{path}: wids counts {len(indexed)} samples, manifest {entry['samples']}")
        for i in range(len(indexed)):
            sample = indexed[i]
            key = sample["__key__"]
            check(wids_fields(sample) == expected.get(key), f"wids: sample {key!r} in {path} differs")
            wids_count += 1
    check(wids_count == len(expected), f"wids read {wids_count} samples, expected {len(expected)}")
    with tempfile.TemporaryDirectory() as tmp:
        index_path = os.path.join(tmp, "shardindex.json")
        with open(index_path, "w") as f:
            json.dump(index, f)
        listed = wids.ShardListDataset(index_path, cache_dir=os.path.join(tmp, "cache"),
                                       transformations=[lambda sample: sample])
        check(len(listed) == len(expected), f"wids.ShardListDataset: {len(listed)} samples, expected {len(expected)}")
        for i in range(0, len(listed), max(1, len(listed) // 50)):
            sample = listed[i]
            check(wids_fields(sample) == expected.get(sample["__key__"]), f"wids.ShardListDataset[{i}] differs")

    # 4. plain, deterministic ustar members
    for path in shards:
        data = open(path, "rb").read()
        check(len(data) % 512 == 0 and data[-1024:] == bytes(1024), f"{path}: does not end with two zero blocks")
        offset = 0
        with tarfile.open(path, "r:") as tar:
            for member in tar:
                header = data[member.offset:member.offset + 512]
                check(member.isreg() and member.type == tarfile.REGTYPE, f"{path}:{member.name}: not a regular file")
                check(not member.pax_headers, f"{path}:{member.name}: has PAX records")
                check(header[257:263] == b"ustar\0" and header[345:500] == bytes(155), f"{path}:{member.name}: not plain ustar")
                check(len(member.name.encode()) <= 100, f"{path}:{member.name}: name over 100 bytes")
                check(member.mode == 0o444 and member.mtime == 0 and member.uname == "bigdata"
                      and member.uid == 0, f"{path}:{member.name}: non-deterministic header fields")
                check(member.offset >= offset, f"{path}: members out of order")
                offset = member.offset

    finish()


if __name__ == "__main__":
    main()
