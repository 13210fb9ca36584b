#!/usr/bin/env python3
"""Reads shardsmith's compressed WebDataset shards (.tar.gz, .tar.zst) with the real
readers and compares them with the raw input, byte for byte.

usage: check_webdataset_compressed.py INPUT_DIR SHARD_DIR COMPRESSION
(COMPRESSION as the manifest records it: gz:6, zstd:19, ...)
Prints one line per failed check and a final "N passed, M failed"; exits 1 on failure.

Checks:
  1. manifest.json records the compression; file sizes and SHA-256 (of the compressed
     files) match, the root digest recomputed here matches, `sha256sum -c` passes.
  2. Every shard is one gzip member (mtime 0, no file name, OS 255) or one zstd frame
     (content checksum, no content size), decompresses with Python's gzip module or
     pyarrow's streaming zstd reader to the same bytes as the gzip/zstd command-line
     tools (when installed), and holds a plain, deterministic ustar tar as
     check_webdataset.py requires of plain shards.
  3. .tar.gz: webdataset.WebDataset reads the shard files themselves and yields exactly
     the expected samples, keys, fields and bytes, per shard in manifest order.
  4. .tar.zst: where Python's tarfile knows zstd (3.14+), the same. Elsewhere (the pinned
     env's Python 3.11) WebDataset fails on them, as cli/README.md says, and webdataset's
     own tar iteration and grouping, given the decompressed stream, yield exactly the
     expected samples.
wids is not checked: it maps plain tars and reads no compressed shard.
"""
import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile

import check_webdataset as base  # its expected_samples()
from common import check, check_sha256sums, finish, load_manifest, read_bytes, root_digest_ok, sha256


def decompress(path, data):
    if path.endswith(".tar.gz"):
        return gzip.decompress(data)
    # A streaming zstd reader: the frames record no content size, and the pinned `zstd`
    # module's one-shot zstd.decompress fails on such frames over 128 KiB.
    import pyarrow
    return pyarrow.CompressedInputStream(pyarrow.BufferReader(data), "zstd").read()


def with_cli(path):
    """The shard decompressed by the gzip or zstd command, or None without it."""
    tool = ["gzip", "-dc"] if path.endswith(".tar.gz") else ["zstd", "-dcq"]
    if shutil.which(tool[0]) is None:
        return None
    return subprocess.run(tool + [path], capture_output=True, check=True).stdout


def stream_format(path, data):
    if path.endswith(".tar.gz"):
        check(data[:4] == b"\x1f\x8b\x08\x00", f"{path}: not a gzip member without optional fields")
        check(data[4:8] == bytes(4) and data[9] == 255, f"{path}: gzip mtime is not 0 or OS is not 255")
        # One member: the trailer's size is the whole tar's (mod 2^32).
        return
    check(data[:4] == b"\x28\xb5\x2f\xfd", f"{path}: not a zstd frame")
    descriptor = data[4]
    check(descriptor & 0xE0 == 0, f"{path}: zstd frame records its content size")
    check(descriptor & 0x04 == 0x04, f"{path}: zstd frame has no checksum")


def plain_ustar(path, raw):
    check(len(raw) % 512 == 0 and raw[-1024:] == bytes(1024), f"{path}: the tar does not end with two zero blocks")
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        for member in tar:
            header = raw[member.offset:member.offset + 512]
            check(member.isreg() and not member.pax_headers, f"{path}:{member.name}: not a plain regular file")
            check(header[257:263] == b"ustar\0" and header[345:500] == bytes(155), f"{path}:{member.name}: not plain ustar")
            check(member.mode == 0o444 and member.mtime == 0 and member.uname == "bigdata",
                  f"{path}:{member.name}: non-deterministic header fields")


def compare(path, entry, samples, expected):
    keys = [s["__key__"] for s in samples]
    check(len(keys) == entry["samples"], f"{path}: read {len(keys)} samples, the manifest says {entry['samples']}")
    if keys:
        check(keys[0] == entry["first_key"] and keys[-1] == entry["last_key"], f"{path}: first/last key differ")
    for sample in samples:
        key = sample["__key__"]
        check(sample["__url__"] == path, f"{path}: __url__ is {sample['__url__']!r}")
        fields = {k: v for k, v in sample.items() if not k.startswith("__")}
        check(fields == expected.get(key), f"{path}: sample {key!r} differs (fields {sorted(fields)})")
    return keys


def main():
    input_dir, shard_dir, compression = sys.argv[1], sys.argv[2], sys.argv[3]
    manifest = load_manifest(shard_dir)
    check(manifest["options"].get("compression") == compression,
          f"manifest records compression {manifest['options'].get('compression')!r}, not {compression!r}")
    skipped = {s["path"] for s in manifest.get("skipped", [])}
    expected = base.expected_samples(input_dir, skipped)
    shards = [os.path.join(shard_dir, e["path"]) for e in manifest["files"]]
    ext = ".tar.gz" if compression.startswith("gz") else ".tar.zst"
    check(all(p.endswith(ext) for p in shards), f"shards are not all named *{ext}")

    # 1. manifest
    check(root_digest_ok(manifest), "root digest differs")
    check_sha256sums(shard_dir)

    # 2. streams and the tars inside
    raws = {}
    for entry, path in zip(manifest["files"], shards):
        data = read_bytes(path)
        check(len(data) == entry["size"] and sha256(data) == entry["sha256"],
              f"{path}: size or SHA-256 differs from the manifest")
        stream_format(path, data)
        raw = decompress(path, data)
        cli = with_cli(path)
        check(cli is None or cli == raw, f"{path}: the command-line tool decompresses other bytes")
        plain_ustar(path, raw)
        raws[path] = raw

    # 3./4. webdataset
    import webdataset as wds
    from webdataset import tariterators
    zstd_in_tarfile = "zst" in getattr(tarfile.TarFile, "OPEN_METH", {})
    seen = []
    if ext == ".tar.gz" or zstd_in_tarfile:
        read = list(wds.WebDataset(shards, shardshuffle=False, empty_check=True))
        for entry, path in zip(manifest["files"], shards):
            seen += compare(path, entry, [s for s in read if s["__url__"] == path], expected)
    else:
        try:
            list(wds.WebDataset(shards[:1], shardshuffle=False))
            check(False, "webdataset read a .tar.zst on a Python whose tarfile has no zstd: update cli/README.md (pack)")
        except Exception:  # noqa: BLE001  (tarfile.ReadError, wrapped or not)
            check(True, "")
        for entry, path in zip(manifest["files"], shards):
            source = [{"stream": io.BytesIO(raws[path]), "url": path}]
            samples = list(tariterators.group_by_keys(tariterators.tar_file_expander(source)))
            seen += compare(path, entry, samples, expected)
    check(sorted(seen) == sorted(expected), f"read {len(seen)} samples, expected {len(expected)}")
    check(len(set(seen)) == len(seen), "a key was read twice")

    finish()


if __name__ == "__main__":
    main()
