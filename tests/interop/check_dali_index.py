#!/usr/bin/env python3
"""DALI's webdataset reader reads shardsmith's DALI indexes (`dali/<shard>.idx`), and
`shardsmith index --for dali` writes what DALI's own `wds2idx` writes, byte for byte.

usage:
  check_dali_index.py read INPUT_DIR SHARD_DIR
      SHARD_DIR was packed from INPUT_DIR with `--index dali`: every shard SHARD_DIR/X.tar
      has SHARD_DIR/dali/X.idx (and nothing else is in dali/); each index is well formed
      (`v1.2 N`, N sample lines, a final newline); nvidia.dali.fn.readers.webdataset, given
      every shard and its index (CPU, device_id=None), reads exactly the input's samples
      (the files of INPUT_DIR less manifest.json's "skipped"): the key of each from the
      reader's source info, every field's bytes, and the count.
  check_dali_index.py compare DIR
      Every DIR/X.tar: DIR/dali/X.idx (by `shardsmith index`) equals what `wds2idx` writes
      for it, byte for byte (run with LC_ALL=C.UTF-8: GNU tar's quoting of names depends on
      the locale); and DALI reads through them the samples Python's tarfile finds in DIR.
  check_dali_index.py write DIR
      Writes shards with webdataset.ShardWriter into DIR (keys with a folder part, a 0-byte
      member, one of exactly 512 bytes): the input of `shardsmith index DIR --for ...`.
  check_dali_index.py index DIR
      Writes DIR/dali/X.idx for every DIR/X.tar with `wds2idx` itself: the reference output
      that shows the `read` check can pass (tests/README.md: how the checks were checked).
Needs the torch env (tests/interop/setup_env.sh torch: nvidia-dali-cuda120, wds2idx).
Prints one line per failed check and a final "N passed, M failed"; exits 1 on failure.
"""
import os
import subprocess
import sys
import tarfile
import tempfile

from check_webdataset import expected_samples
from common import check, finish, load_manifest, read_bytes


def shards_of(shard_dir):
    """The shards of `shard_dir` (top level, `*.tar`), sorted by name."""
    return sorted(os.path.join(shard_dir, n) for n in os.listdir(shard_dir) if n.endswith(".tar"))


def idx_path(shard):
    """Where shardsmith puts a shard's DALI index: `dali/<name without .tar>.idx` beside it."""
    base = os.path.basename(shard)[: -len(".tar")]
    return os.path.join(os.path.dirname(shard), "dali", base + ".idx")


def split_member(name):
    """The webdataset rule (DALI's and wds2idx's too): key = path up to the first dot of the
    file name, ext = the rest."""
    head, _, base = name.rpartition("/")
    stem, _, ext = base.partition(".")
    return (f"{head}/{stem}" if head else stem), ext


def tar_samples(shard):
    """[(key, {ext: bytes})] of a shard in archive order, consecutive regular members with
    the same key forming a sample (what a reader of the shard sees)."""
    samples = []
    with tarfile.open(shard, "r:") as tar:
        for member in tar:
            if not member.isreg():
                continue
            key, ext = split_member(member.name)
            data = tar.extractfile(member).read()
            if samples and samples[-1][0] == key:
                samples[-1][1][ext] = data
            else:
                samples.append((key, {ext: data}))
    return samples


def check_idx_format(path):
    """`v1.2 N`, then N lines of `ext offset size name` groups, offsets block-aligned, and a
    final newline: what DALI's parser accepts (see formats/shard/README.md, Readers' indexes)."""
    data = read_bytes(path)
    check(data.endswith(b"\n"), f"{path}: no final newline")
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    if data.endswith(b"\n"):
        lines.pop()
    head = lines[0].split(" ") if lines else []
    check(len(head) == 2 and head[0] == "v1.2" and head[1].isdigit(), f"{path}: first line {lines[:1]!r} is not `v1.2 N`")
    if len(head) == 2 and head[1].isdigit():
        check(int(head[1]) == len(lines) - 1, f"{path}: says {head[1]} samples, has {len(lines) - 1} lines")
    for n, line in enumerate(lines[1:], 2):
        fields = line.split(" ")
        ok = len(fields) % 4 == 0 and len(fields) > 0
        ok = ok and all(fields[i + 1].isdigit() and int(fields[i + 1]) % 512 == 0 and fields[i + 2].isdigit()
                        for i in range(0, len(fields), 4))
        check(ok, f"{path}:{n}: not `ext offset size name` groups with block-aligned offsets: {line[:200]!r}")


def dali_read(shards, idxs, exts):
    """Every sample DALI's webdataset reader yields for `shards` through `idxs`, in order:
    [(source key or None, {ext: bytes} of the non-empty components)]."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        outs = fn.readers.webdataset(paths=shards, index_paths=idxs, ext=exts,
                                     missing_component_behavior="empty", name="reader")
        return tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)

    p = pipe()
    p.build()
    total = p.epoch_size("reader")
    got = []
    for _ in range(total):
        outs = p.run()
        fields, keys = {}, set()
        for ext, out in zip(exts, outs):
            tensor = out[0]
            data = bytes(tensor.as_array().tobytes()) if hasattr(tensor, "as_array") else bytes(memoryview(tensor))
            if data:
                fields[ext.lower()] = data
            source = tensor.source_info()
            if source:
                # "<shard path>:<data offset>:<member name as the index has it>"
                shard = next((s for s in shards if source.startswith(s + ":")), None)
                check(shard is not None, f"DALI source info {source!r} names no shard")
                if shard is not None:
                    name = source[len(shard) + 1:].split(":", 1)[1]
                    key, member_ext = split_member(name)
                    check(member_ext == ext, f"DALI source info {source!r}: output `{ext}` from member `{name}`")
                    keys.add(key)
        check(len(keys) <= 1, f"DALI sample with members of several keys: {sorted(keys)}")
        got.append((next(iter(keys)) if keys else None, fields))
    return got


def exts_of(shards):
    """Every member extension of `shards`, as the members spell it (DALI matches exactly)."""
    exts = set()
    for shard in shards:
        with tarfile.open(shard, "r:") as tar:
            exts.update(split_member(m.name)[1] for m in tar if m.isreg())
    return sorted(exts)


def read_against(shards, expected):
    """DALI reads `shards` through their `dali/` indexes; `expected` is key -> {ext: bytes}
    (ext lowercased); every sample once, same bytes, same count."""
    idxs = [idx_path(s) for s in shards]
    for idx in idxs:
        check(os.path.isfile(idx), f"{idx}: missing")
    if not all(os.path.isfile(i) for i in idxs):
        return
    for idx in idxs:
        check_idx_format(idx)
    try:
        got = dali_read(shards, idxs, exts_of(shards))
    except RuntimeError as e:  # DALI's parser rejects the index: its message names file and line
        check(False, f"DALI failed: {str(e).strip().splitlines()[-3:]}")
        return
    check(len(got) == len(expected), f"DALI read {len(got)} samples, expected {len(expected)}")
    seen = set()
    keyless = []
    for key, fields in got:
        if key is None:
            keyless.append(fields)
            continue
        check(key not in seen, f"DALI: key {key!r} read twice")
        seen.add(key)
        want = {e: v for e, v in expected.get(key, {}).items() if v}
        check(key in expected and fields == want,
              f"DALI: sample {key!r} differs from the input (fields {sorted(fields)} vs {sorted(want)})")
    # A sample whose components are all empty has no source info: it is counted, not keyed.
    empty = [k for k, v in expected.items() if not any(v.values())]
    check(all(not f for f in keyless) and len(keyless) == len(empty),
          f"DALI: {len(keyless)} samples without a key, the input has {len(empty)} samples of empty files only")
    missing = set(expected) - seen - set(empty)
    check(not missing, f"DALI never read {len(missing)} input samples, e.g. {sorted(missing)[:3]}")


def wds2idx(shard, out):
    """Runs DALI's wds2idx (the console script beside this interpreter) on `shard`."""
    script = os.path.join(os.path.dirname(sys.executable), "wds2idx")
    env = dict(os.environ, LC_ALL="C.UTF-8")
    subprocess.run([sys.executable, script, shard, out], check=True, env=env, stdout=subprocess.DEVNULL)


def writer_samples():
    """Deterministic samples for ShardWriter: keys with a folder part, fields .cls .jpg .json,
    sizes across block boundaries, one 0-byte member and one of exactly 512 bytes."""
    samples = []
    for i in range(30):
        sample = {"__key__": f"a/b{i % 3}/{i:06d}", "cls": str(i % 5).encode(),
                  "jpg": bytes((i * 7 + j) % 251 for j in range((i * 389) % 2100)),
                  "json": f'{{"i": {i}}}'.encode()}
        if i == 4:
            sample["cls"] = b""
        if i == 5:
            sample["jpg"] = bytes(range(256)) * 2
        samples.append(sample)
    return samples


def write(shard_dir):
    """ShardWriter shards (`part-%06d.tar`, 8 samples each) of writer_samples() in `shard_dir`."""
    import webdataset
    os.makedirs(shard_dir, exist_ok=True)
    with webdataset.ShardWriter(os.path.join(shard_dir, "part-%06d.tar"), maxcount=8, verbose=0) as sink:
        for sample in writer_samples():
            sink.write(sample)
    check(len(shards_of(shard_dir)) > 1, "ShardWriter wrote one shard only")


def main():
    mode = sys.argv[1]
    if mode == "read":
        input_dir, shard_dir = sys.argv[2], os.path.abspath(sys.argv[3])
        skipped = {s["path"] for s in load_manifest(shard_dir).get("skipped", [])}
        shards = shards_of(shard_dir)
        check(len(shards) > 0, f"{shard_dir}: no shards")
        names = {os.path.basename(idx_path(s)) for s in shards}
        extra = sorted(set(os.listdir(os.path.join(shard_dir, "dali"))) - names) if os.path.isdir(os.path.join(shard_dir, "dali")) else []
        check(not extra, f"{shard_dir}/dali: files for no shard: {extra}")
        read_against(shards, expected_samples(input_dir, skipped))
    elif mode == "compare":
        shard_dir = os.path.abspath(sys.argv[2])
        shards = shards_of(shard_dir)
        check(len(shards) > 0, f"{shard_dir}: no shards")
        with tempfile.TemporaryDirectory() as tmp:
            for shard in shards:
                theirs = os.path.join(tmp, os.path.basename(idx_path(shard)))
                wds2idx(shard, theirs)
                ours = idx_path(shard)
                same = os.path.isfile(ours) and read_bytes(ours) == read_bytes(theirs)
                check(same, f"{ours} differs from wds2idx's:\n"
                      f"ours:   {read_bytes(ours)[:300] if os.path.isfile(ours) else 'missing'!r}\n"
                      f"theirs: {read_bytes(theirs)[:300]!r}")
        expected = {}
        for shard in shards:
            for key, fields in tar_samples(shard):
                check(key not in expected, f"{shard}: key {key!r} in two samples")
                expected[key] = {e.lower(): v for e, v in fields.items()}
        read_against(shards, expected)
    elif mode == "write":
        write(sys.argv[2])
    elif mode == "index":
        shard_dir = os.path.abspath(sys.argv[2])
        os.makedirs(os.path.join(shard_dir, "dali"), exist_ok=True)
        for shard in shards_of(shard_dir):
            wds2idx(shard, idx_path(shard))
    else:
        sys.exit(f"unknown mode {mode}")
    finish()


if __name__ == "__main__":
    main()
