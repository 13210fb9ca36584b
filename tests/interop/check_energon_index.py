#!/usr/bin/env python3
"""Megatron-Energon reads a dataset that shardsmith prepared for it (`--index energon`:
`.nv-meta/` and a `.tar.idx` beside each shard, no `energon prepare` run), and `shardsmith
index --for energon` writes what `energon prepare` writes.

usage:
  check_energon_index.py read INPUT_DIR SHARD_DIR
      SHARD_DIR was packed from INPUT_DIR with `--index energon`. Energon's loader
      (get_train_dataset, the train split, no decoding) yields every input sample once (the
      files of INPUT_DIR less manifest.json's "skipped"): key and every field's bytes; its
      by-key readers over index.sqlite (SqliteITarEntryReader for whole samples,
      WebdatasetFileStore for single members), in a shuffled order, return the same.
  check_energon_index.py compare DIR
      Copies DIR's shards (every non-hidden `*.tar` below DIR) to a fresh folder, runs
      `energon prepare` there (--num-workers 1: with more workers its rows land in
      index.sqlite in whatever order the workers finish), and asserts ours equal theirs:
      every `.tar.idx`, `.nv-meta/.info.json`, `split.yaml`, `dataset.yaml` byte for byte;
      index.sqlite's schema (sqlite_master rows) and every row of `samples` and
      `sample_parts` in rowid order, user_version and application_id. index.uuid (random)
      must only be a uuid. Then energon reads the samples Python's tarfile finds in DIR.
  check_energon_index.py index DIR
      Runs `energon prepare` on DIR itself: the reference output that shows the `read`
      check can pass.
Needs the torch env (tests/interop/setup_env.sh torch: megatron-energon and torch).
Facts behind the checks: formats/shard/README.md, section Readers' indexes (issue 33).
Prints one line per failed check and a final "N passed, M failed"; exits 1 on failure.
"""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid

from check_dali_index import tar_samples
from check_webdataset import expected_samples
from common import check, finish, load_manifest, read_bytes

META = ".nv-meta"


def shards_below(root):
    """The shards energon prepare finds: `**/*.tar` outside hidden folders, relative, sorted
    part by part (as energon sorts its paths)."""
    found = []
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in files:
            if name.endswith(".tar"):
                found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(found, key=lambda rel: rel.split("/"))


def prepare(root):
    """`energon prepare` of `root` as a user runs it for a plain dataset, one worker."""
    energon = os.path.join(os.path.dirname(sys.executable), "energon")
    done = subprocess.run([sys.executable, energon, "prepare", "--non-interactive", "--split-ratio", "1,0,0",
                           "--sample-type", "CrudeWebdataset", "--no-progress", "--num-workers", "1", root],
                          capture_output=True, text=True)
    check(done.returncode == 0, f"energon prepare {root} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.returncode == 0


def fields_of(sample):
    """A loaded sample's parts, ext lowercased (the webdataset rule of expected_samples)."""
    return {k.lower(): bytes(v) for k, v in sample.items() if not k.startswith("__")}


def load_all(root):
    """Every sample energon's loader yields for the train split of `root`, in its order."""
    from megatron.energon import Cooker, DefaultTaskEncoder, WorkerConfig, get_loader, get_train_dataset, stateless

    @stateless
    def cook(sample):
        return sample

    class Raw(DefaultTaskEncoder):
        cookers = [Cooker(cook)]
        decoder = None  # raw bytes: no image or JSON decoding

    workers = WorkerConfig(rank=0, world_size=1, num_workers=0)
    dataset = get_train_dataset(root, batch_size=None, worker_config=workers, shuffle_buffer_size=None,
                                max_samples_per_sequence=None, task_encoder=Raw(), repeat=False)
    return [(s["__key__"], s["__shard__"], fields_of(s)) for s in get_loader(dataset)]


def read_against(root, expected):
    """Energon's sequential loader and its by-key readers against `expected` (key ->
    {ext: bytes}, ext lowercased)."""
    import warnings
    warnings.filterwarnings("ignore", message=".*pin_memory.*")
    from megatron.energon.cache.file_store import WebdatasetFileStore
    from megatron.energon.epathlib import EPath
    from megatron.energon.flavors.webdataset.itar_reader import SqliteITarEntryReader

    try:
        with open(os.path.join(root, META, ".info.json")) as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{root}/{META}/.info.json: {e}")
        return
    check(sum(info.get("shard_counts", {}).values()) == len(expected),
          f".info.json counts {sum(info.get('shard_counts', {}).values())} samples, expected {len(expected)}")
    try:
        loaded = load_all(root)
    except Exception as e:  # energon's errors name the file: report them as a failed check
        check(False, f"energon's loader failed: {type(e).__name__}: {str(e)[:500]}")
        loaded = []
    check(len(loaded) == len(expected), f"energon's loader yielded {len(loaded)} samples, expected {len(expected)}")
    seen = set()
    for key, shard, fields in loaded:
        check(key not in seen, f"energon's loader: key {key!r} twice")
        seen.add(key)
        check(fields == expected.get(key), f"energon's loader: sample {key!r} ({shard}) differs from the input "
              f"(fields {sorted(fields)} vs {sorted(expected.get(key, {}))})")
    check(seen == set(expected), f"energon's loader missed {sorted(set(expected) - seen)[:3]}")

    by_key = SqliteITarEntryReader(base_path=EPath(root))
    store = WebdatasetFileStore(EPath(root))
    check(len(by_key) == len(expected), f"index.sqlite has {len(by_key)} samples, expected {len(expected)}")
    keys = sorted(expected)
    random.Random(33).shuffle(keys)
    for key in keys:
        try:
            sample = by_key[key]
        except Exception as e:
            check(False, f"SqliteITarEntryReader[{key!r}]: {type(e).__name__}: {str(e)[:300]}")
            continue
        check(sample["__key__"] == key and fields_of(sample) == expected[key],
              f"SqliteITarEntryReader[{key!r}] differs from the input")
        for ext in (k for k in sample if not k.startswith("__")):
            try:
                data, _ = store[f"{key}.{ext}"]
            except Exception as e:
                check(False, f"WebdatasetFileStore[{key}.{ext}]: {type(e).__name__}: {str(e)[:300]}")
                continue
            check(data == expected[key].get(ext.lower()), f"WebdatasetFileStore[{key}.{ext}] differs from the input")


def sqlite_content(path):
    """What must match in index.sqlite: schema, rows in rowid order, header pragmas."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            "schema": db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").fetchall(),
            "samples": db.execute("SELECT rowid, * FROM samples ORDER BY rowid").fetchall(),
            "sample_parts": db.execute("SELECT rowid, * FROM sample_parts ORDER BY rowid").fetchall(),
            "user_version": db.execute("PRAGMA user_version").fetchone(),
            "application_id": db.execute("PRAGMA application_id").fetchone(),
        }
    finally:
        db.close()


def first_difference(ours, theirs):
    """The first differing item of two lists, for a readable failure."""
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return f"#{i}: ours {a!r}, theirs {b!r}"
    return f"lengths: ours {len(ours)}, theirs {len(theirs)}"


def compare(root):
    shards = shards_below(root)
    check(len(shards) > 0, f"{root}: no shards")
    with tempfile.TemporaryDirectory() as tmp:
        theirs_root = os.path.join(tmp, "ref")
        for rel in shards:
            os.makedirs(os.path.dirname(os.path.join(theirs_root, rel)), exist_ok=True)
            shutil.copyfile(os.path.join(root, rel), os.path.join(theirs_root, rel))
        if not prepare(theirs_root):
            return
        for rel in [s[: -len(".tar")] + ".tar.idx" for s in shards] + [f"{META}/{n}" for n in (".info.json", "split.yaml", "dataset.yaml")]:
            ours_path = os.path.join(root, rel)
            theirs = read_bytes(os.path.join(theirs_root, rel))
            ours = read_bytes(ours_path) if os.path.isfile(ours_path) else None
            check(ours == theirs, f"{rel} differs from energon prepare's:\nours:   {ours[:400] if ours is not None else 'missing'!r}\ntheirs: {theirs[:400]!r}")
        ours_db = os.path.join(root, META, "index.sqlite")
        if not os.path.isfile(ours_db):
            check(False, f"{ours_db}: missing")
        else:
            ours, theirs = sqlite_content(ours_db), sqlite_content(os.path.join(theirs_root, META, "index.sqlite"))
            for part in theirs:
                check(ours[part] == theirs[part], f"index.sqlite {part} differs from energon prepare's: "
                      f"{first_difference(ours[part], theirs[part]) if isinstance(theirs[part], list) else (ours[part], theirs[part])}")
        for extra in ("-journal", "-wal", "-shm"):
            check(not os.path.exists(ours_db + extra), f"{ours_db}{extra} left beside index.sqlite")
        uuid_path = os.path.join(root, META, "index.uuid")
        text = read_bytes(uuid_path).decode() if os.path.isfile(uuid_path) else ""
        try:
            ok = str(uuid.UUID(text)) == text
        except ValueError:
            ok = False
        check(ok, f"{uuid_path}: {text!r} is not a uuid written as energon writes it (36 characters, no newline)")
    expected = {}
    for rel in shards:
        for key, fields in tar_samples(os.path.join(root, rel)):
            check(key not in expected, f"{rel}: key {key!r} in two samples")
            expected[key] = {e.lower(): v for e, v in fields.items()}
    read_against(root, expected)


def main():
    mode = sys.argv[1]
    if mode == "read":
        input_dir, shard_dir = sys.argv[2], os.path.abspath(sys.argv[3])
        skipped = {s["path"] for s in load_manifest(shard_dir).get("skipped", [])}
        for name in (".info.json", "split.yaml", "dataset.yaml", "index.sqlite", "index.uuid"):
            check(os.path.isfile(os.path.join(shard_dir, META, name)), f"{shard_dir}/{META}/{name}: missing")
        for rel in shards_below(shard_dir):
            idx = os.path.join(shard_dir, rel[: -len(".tar")] + ".tar.idx")
            check(os.path.isfile(idx), f"{idx}: missing")
        read_against(shard_dir, expected_samples(input_dir, skipped))
    elif mode == "compare":
        compare(os.path.abspath(sys.argv[2]))
    elif mode == "index":
        prepare(os.path.abspath(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode}")
    finish()


if __name__ == "__main__":
    main()
