"""What the interop scripts share: the pass/fail tally they report, our manifest and its
root digest, SHA-256, and the webdataset rule that groups files into samples.

A checker calls check() for every comparison and ends with finish(): it prints one
"FAIL: message" line per failed check as it happens, then "N passed, M failed" (the line
the Rust tests look for, tests/interop.rs), and exits 1 when a check failed. Imported
by the scripts of this directory, which Python puts first on sys.path when it runs one
of them; standard library only, so every env (readers, images, torch) can import it.
"""
import hashlib
import json
import os
import subprocess
import sys

failures = []
passed = 0


def check(ok, message):
    """Counts one check; prints and records `message` when it failed."""
    global passed
    if ok:
        passed += 1
    else:
        failures.append(message)
        print("FAIL:", message)


def summary():
    """The last line a checker prints: "N passed, M failed"."""
    return f"{passed} passed, {len(failures)} failed"


def finish():
    """Prints the summary and exits: 1 when any check failed, else 0."""
    print(summary())
    sys.exit(1 if failures else 0)


def sha256(data):
    """The hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path):
    """The bytes of the file at `path`."""
    with open(path, "rb") as f:
        return f.read()


def load_manifest(out_dir):
    """The manifest.json shardsmith wrote in `out_dir`."""
    with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def canonical(value):
    """Our canonical JSON: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def root_digest_ok(manifest):
    """Whether `root_sha256` is the SHA-256 of the canonical JSON of the rest."""
    rest = {k: v for k, v in manifest.items() if k != "root_sha256"}
    return sha256(canonical(rest)) == manifest["root_sha256"]


def check_sha256sums(shard_dir):
    """Checks that `sha256sum -c SHA256SUMS` passes in `shard_dir`."""
    sums = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=shard_dir, capture_output=True, text=True)
    check(sums.returncode == 0, f"sha256sum -c failed: {sums.stdout}{sums.stderr}")


def key_field(rel):
    """The webdataset rule: key = path up to the first dot of the file name; field = the
    rest, lowercased."""
    head, _, base = rel.rpartition("/")
    stem, _, ext = base.partition(".")
    return (f"{head}/{stem}" if head else stem), ext.lower()


def raw_samples(root):
    """The files below `root` grouped into samples by the webdataset rule:
    [(key, {field: bytes})], keys in byte order."""
    groups = {}
    for d, _, files in os.walk(root):
        for name in files:
            rel = os.path.relpath(os.path.join(d, name), root).replace(os.sep, "/")
            key, field = key_field(rel)
            groups.setdefault(key, {})[field] = read_bytes(os.path.join(d, name))
    return [(key, groups[key]) for key in sorted(groups, key=lambda k: k.encode())]
