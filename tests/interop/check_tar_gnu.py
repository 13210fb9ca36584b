"""What Python's tarfile and webdataset 1.0.2 read from tars GNU tar wrote (sparse
members, PAX xattr records), and from the shards `shardsmith pack` made of them.

Usage: check_tar_gnu.py PATH...   (a tar file, or a directory of packed .tar shards)
       check_tar_gnu.py --xattr FILE TAR   (the fixture of a NUL-ending xattr value)

Prints one JSON object: for each PATH, "tarfile" (a tar file only: its members as
[name, type, size, sha256], and the PAX records of members that have any, values as
Python's repr so NUL bytes show) and "webdataset" (the samples, in order: {"__key__",
field: sha256}), each replaced by {"error": "..."} when the reader raises. The Rust test
asserts these verdicts beside shardsmith's.
"""

import json
import os
import sys
import tarfile

import webdataset as wds

from common import sha256


def read_tarfile(path):
    members, pax = [], {}
    with tarfile.open(path) as tar:
        for m in tar:
            data = tar.extractfile(m).read() if m.isreg() else b""
            members.append([m.name, m.type.decode("latin-1"), m.size, sha256(data)])
            if m.pax_headers:
                pax[m.name] = {k: repr(v) for k, v in m.pax_headers.items()}
    return {"members": members, "pax": pax}


def read_webdataset(urls):
    samples = []
    for sample in wds.WebDataset(urls, shardshuffle=False, empty_check=False):
        out = {"__key__": sample["__key__"]}
        for field, value in sample.items():
            if not field.startswith("__"):
                out[field] = sha256(value)
        samples.append(out)
    return samples


def verdict(read, *args):
    try:
        return read(*args)
    except Exception as e:  # the verdict is data: the test asserts it
        return {"error": f"{type(e).__name__}: {e}"}


def xattr_fixture(path, tar_path):
    """Sets `user.mime` = b"image/jpeg\\0" on `path` and prints "xattr", for GNU tar
    --xattrs to record; where the filesystem refuses user xattrs, writes `tar_path` with
    the record GNU tar would write (tarfile's pax_headers, PAX format) and prints
    "tarfile"."""
    value = b"image/jpeg\0"
    try:
        os.setxattr(path, "user.mime", value)
        print("xattr")
        return
    except OSError:
        pass
    directory = os.path.dirname(path)
    with tarfile.open(tar_path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(os.listdir(directory)):
            info = tar.gettarinfo(os.path.join(directory, name), arcname=name)
            if name == os.path.basename(path):
                info.pax_headers = {"SCHILY.xattr.user.mime": value.decode()}
            with open(os.path.join(directory, name), "rb") as f:
                tar.addfile(info, f)
    print("tarfile")


def main():
    if sys.argv[1:2] == ["--xattr"]:
        return xattr_fixture(sys.argv[2], sys.argv[3])
    report = {}
    for path in sys.argv[1:]:
        if os.path.isdir(path):
            shards = sorted(
                os.path.join(path, name) for name in os.listdir(path) if name.endswith(".tar")
            )
            report[path] = {"webdataset": verdict(read_webdataset, shards)}
        else:
            report[path] = {
                "tarfile": verdict(read_tarfile, path),
                "webdataset": verdict(read_webdataset, path),
            }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
