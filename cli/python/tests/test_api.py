"""Tests of shardsmith's Python API (the installed `shardsmith-api` wheel).

Run in a venv where the wheel is installed:  pytest cli/python/tests
Environment:
  SHARDSMITH_BIN  a `shardsmith` CLI binary: when set, every result is also compared with
                  what the CLI prints with --json (findings, reports, manifest bytes, error
                  messages); those comparisons are skipped without it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import shutil
import struct
import subprocess
import tarfile
import threading
import time

import pytest

import shardsmith

BIN = os.environ.get("SHARDSMITH_BIN")
needs_cli = pytest.mark.skipif(not BIN, reason="SHARDSMITH_BIN names no CLI binary")


def cli(*args, expect=(0, 1)):
    """Runs the CLI with --json; returns (exit code, parsed stdout, stderr)."""
    run = subprocess.run(
        [BIN, *map(str, args), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "SHARDSMITH_NO_PROGRESS": "1"},
    )
    assert run.returncode in expect, (run.returncode, run.stderr)
    return run.returncode, json.loads(run.stdout), run.stderr


def without_seconds(report):
    return {k: v for k, v in report.items() if k != "seconds"}


def make_dataset(root: pathlib.Path) -> pathlib.Path:
    """A small dataset: a webdataset tar shard of 3 samples, a binary file, a text file."""
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(root / "shard-000000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(3):
            for ext, body in (("txt", f"caption {i}\n".encode()), ("json", b'{"i": %d}' % i)):
                info = tarfile.TarInfo(f"{i:06d}.{ext}")
                info.size = len(body)
                info.mtime = 0
                tar.addfile(info, io.BytesIO(body))
    (root / "data.bin").write_bytes(bytes(range(256)) * 40)  # 10240 bytes
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / "notes.txt").write_text("hello\n")
    return root


def safetensors_bytes(n: int = 256) -> bytes:
    """A valid safetensors file: 8-byte LE header length, JSON header, F32 data."""
    header = json.dumps(
        {"w": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}},
        separators=(",", ":"),
    ).encode()
    header += b" " * (-len(header) % 8)
    data = struct.pack(f"<{n}f", *[0.5 + i for i in range(n)])
    return struct.pack("<Q", len(header)) + header + data


# --- verify -------------------------------------------------------------------------


def test_clean_dataset_verifies_ok(tmp_path):
    d = make_dataset(tmp_path / "ds")
    m = shardsmith.manifest(d)
    assert m.path == str(d / "manifest.json")
    assert m.file_count == 3 and len(m.files) == 3
    assert [f.path for f in m.files] == ["data.bin", "shard-000000.tar", "sub/notes.txt"]
    for f in m.files:
        body = (d / f.path).read_bytes()
        assert f.size == len(body) and f.sha256 == hashlib.sha256(body).hexdigest()
    assert m.samples == 3 and m.tensors is None and m.warnings == []
    # The root digest is manifest/README.md's formula over the manifest written.
    data = json.loads((d / "manifest.json").read_text())
    root = data.pop("root_sha256")
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert root == m.root_sha256 == hashlib.sha256(canon.encode()).hexdigest()
    assert (d / "SHA256SUMS").exists()

    report = shardsmith.verify(d, expect_root=m.root_sha256)
    assert report.ok and bool(report)
    assert report.findings == [] and report.errors == 0 and report.warnings == 0
    assert report.files_checked == 3
    assert report.bytes_checked == sum(f.size for f in m.files)
    assert report.samples == 3
    assert report.root_sha256 == m.root_sha256
    assert report.manifest == "manifest.json"
    assert report.checked["manifest"] == 3
    assert str(report) == "OK: no problems found"
    assert "ok=True" in repr(report)
    assert report.to_dict()["ok"] is True
    assert json.loads(report.json())["command"] == "verify"


def damage(d: pathlib.Path) -> None:
    """Flips a byte, truncates a file, deletes another."""
    with open(d / "data.bin", "r+b") as f:
        f.seek(1234)
        byte = f.read(1)
        f.seek(1234)
        f.write(bytes([byte[0] ^ 0xFF]))
    with open(d / "shard-000000.tar", "r+b") as f:
        f.truncate(1024 + 512)  # mid-archive: the second member's data is cut
    (d / "sub" / "notes.txt").unlink()


def test_corrupted_dataset_exact_findings(tmp_path):
    d = make_dataset(tmp_path / "ds")
    shardsmith.manifest(d)
    damage(d)
    report = shardsmith.verify(str(d))
    assert not report.ok and not report
    got = [(f.kind, f.file, f.offset, f.end, f.severity) for f in report.findings]
    assert got == [
        ("hash_mismatch", "data.bin", 0, 10240, "error"),
        # The shard cut after its first member's header: readers see 1 sample of 3.
        ("sample_count_mismatch", "shard-000000.tar", None, None, "error"),
        ("hash_mismatch", "shard-000000.tar", 0, 10240, "error"),
        ("size_mismatch", "shard-000000.tar", 1536, None, "error"),
        ("truncated", "shard-000000.tar", 1536, 1544, "error"),
        ("missing_file", "sub/notes.txt", None, None, "error"),
    ]
    assert all(f.is_error for f in report.findings)
    assert (report.errors, report.warnings) == (6, 0)
    size = report.findings[3]
    assert (size.expected, size.actual) == ("10240", "1536")
    hm = next(f for f in report.findings if f.kind == "hash_mismatch")
    assert (hm.offset, hm.end) == (0, 10240)
    assert hm.expected and hm.actual and hm.expected != hm.actual
    assert str(hm).startswith("data.bin: hash_mismatch at bytes 0..10240: SHA-256 differs")
    assert str(hm).endswith(f"(expected {hm.expected}, found {hm.actual})")
    assert repr(hm) == "Finding(kind='hash_mismatch', severity='error', file='data.bin', offset=0, end=10240)"
    missing = next(f for f in report.findings if f.kind == "missing_file")
    assert missing.offset is None and missing.end is None
    assert str(report).splitlines()[-1].startswith("FAILED: ")


@needs_cli
def test_findings_and_report_equal_the_cli_json(tmp_path):
    d = make_dataset(tmp_path / "ds")
    shardsmith.manifest(d)
    for damaged in (False, True):
        if damaged:
            damage(d)
        report = shardsmith.verify(d)
        code, out, _ = cli("verify", d)
        assert code == (1 if damaged else 0)
        assert [f.to_dict() for f in report.findings] == out["findings"]
        assert without_seconds(report.to_dict()) == without_seconds(out)
        # The human lines: the CLI prints "error: <str(finding)>".
        text = subprocess.run([BIN, "verify", str(d)], capture_output=True, text=True).stdout
        for f in report.findings:
            assert f"{f.severity}: {f}\n" in text


def test_deep_and_single_file(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes())
    report = shardsmith.verify(tmp_path / "model.safetensors", deep=True)
    assert report.ok, report
    assert report.files_checked == 1 and report.checked["structure"] == 1


def test_nothing_to_verify_is_a_finding_unless_allowed(tmp_path):
    report = shardsmith.verify(tmp_path)
    assert [(f.kind, f.file) for f in report.findings] == [("nothing_to_verify", ".")]
    assert shardsmith.verify(tmp_path, allow_empty=True).ok


def hub(root: pathlib.Path) -> pathlib.Path:
    """The Hugging Face cache example of formats/checkpoint/README.md."""
    repo = root / "hub" / "models--acme--tiny"
    commit = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
    for sub in ("blobs", "refs", f"snapshots/{commit}"):
        (repo / sub).mkdir(parents=True)
    blobs = {
        "config.json": b'{"hidden_size": 32}\n',
        "model.safetensors": b"safetensors weights, in short\n",
    }
    for name, body in blobs.items():
        if name == "config.json":
            etag = hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
        else:
            etag = hashlib.sha256(body).hexdigest()
        (repo / "blobs" / etag).write_bytes(body)
        os.symlink(f"../../blobs/{etag}", repo / "snapshots" / commit / name)
    (repo / "refs" / "main").write_text(commit)
    return root / "hub"


def test_hugging_face_cache(tmp_path):
    h = hub(tmp_path)
    assert shardsmith.verify(h).ok
    blob = next(p for p in (h / "models--acme--tiny" / "blobs").iterdir() if len(p.name) == 64)
    with open(blob, "r+b") as f:
        f.seek(3)
        f.write(b"X")
    report = shardsmith.verify(h)
    assert [(f.kind, f.file) for f in report.findings] == [
        ("hash_mismatch", f"models--acme--tiny/blobs/{blob.name}")
    ]
    with pytest.raises(shardsmith.ShardsmithError, match="Hugging Face cache"):
        shardsmith.verify(h, expect_root="0" * 64)
    if BIN:
        _, out, _ = cli("verify", h)
        assert without_seconds(report.to_dict()) == without_seconds(out)


# --- manifest -----------------------------------------------------------------------


def test_manifest_refuses_to_replace_without_force(tmp_path):
    d = make_dataset(tmp_path / "ds")
    first = shardsmith.manifest(d)
    with pytest.raises(shardsmith.ShardsmithError, match="already exists"):
        shardsmith.manifest(d)
    again = shardsmith.manifest(d, force=True)
    assert again.root_sha256 == first.root_sha256
    out = tmp_path / "elsewhere.json"
    third = shardsmith.manifest(d, output=out, force=True)
    assert third.path == str(out) and out.read_bytes() == (d / "manifest.json").read_bytes()
    assert shardsmith.verify(d, manifest=out).ok


def test_manifest_refuses_an_unfinished_run(tmp_path):
    d = make_dataset(tmp_path / "ds")
    state = d / ".shardsmith-state"
    state.mkdir()
    (state / "run.json").write_text('{"fingerprint": "x", "command": "pack"}')
    (state / "plan-000000.json").write_text("{}")
    with pytest.raises(shardsmith.ShardsmithError, match="holds an unfinished `pack` run"):
        shardsmith.manifest(d)
    assert not (d / "manifest.json").exists()
    report = shardsmith.verify(d)
    assert not report.ok
    assert [f.kind for f in report.findings if f.kind == "unfinished_run"] == ["unfinished_run"]


@needs_cli
def test_manifest_writes_the_cli_bytes(tmp_path):
    ours = make_dataset(tmp_path / "ours")
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs)
    (ours / "model.safetensors").write_bytes(safetensors_bytes())
    (theirs / "model.safetensors").write_bytes(safetensors_bytes())
    m = shardsmith.manifest(ours, tensors=True)
    _, out, _ = cli("manifest", theirs, "--tensors")
    for name in ("manifest.json", "SHA256SUMS"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    assert m.tensors == out["tensors"] == 1
    mine = without_seconds(m.to_dict())
    assert mine.pop("manifest") == str(ours / "manifest.json")
    assert out.pop("manifest") == str(theirs / "manifest.json")
    assert mine == without_seconds(out)
    # --output: the manifest alone, same bytes.
    shardsmith.manifest(ours, output=tmp_path / "a.json")
    cli("manifest", theirs, "--output", tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


# --- audit --------------------------------------------------------------------------


def make_run(root: pathlib.Path) -> pathlib.Path:
    """global_step5 intact, global_step10 with a truncated safetensors file."""
    for step in (5, 10):
        ck = root / f"global_step{step}"
        ck.mkdir(parents=True)
        (ck / "model.safetensors").write_bytes(safetensors_bytes())
    with open(root / "global_step10" / "model.safetensors", "r+b") as f:
        f.truncate(300)
    return root


def test_audit_names_the_newest_intact_checkpoint(tmp_path):
    run = make_run(tmp_path / "run")
    report = shardsmith.audit(run)
    assert not report.ok and not report
    assert report.newest == "global_step10"
    assert report.newest_intact == "global_step5"
    assert report.resume_from == str(run / "global_step5")
    assert [(c.name, c.step, c.intact) for c in report.checkpoints] == [
        ("global_step5", 5, True),
        ("global_step10", 10, False),
    ]
    broken = report.checkpoints[1]
    assert broken.errors >= 1 and broken.findings
    assert all(isinstance(f, shardsmith.Finding) for f in broken.findings)
    assert {(f.kind, f.file) for f in broken.findings} >= {("truncated", "model.safetensors")}
    assert report.to_dict()["newest_intact"] == "global_step5"
    if BIN:
        code, out, _ = cli("audit", run)
        assert code == 1
        assert without_seconds(report.to_dict()) == without_seconds(out)
    shutil.rmtree(run / "global_step10")
    assert shardsmith.audit(run).ok


# --- errors -------------------------------------------------------------------------


def cli_error(*args):
    """The CLI's message for a call that cannot run (exit 2)."""
    run = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    assert run.returncode == 2, run
    return run.stderr.splitlines()[0].removeprefix("error: ")


def test_missing_path_raises(tmp_path):
    missing = tmp_path / "nosuch"
    assert issubclass(shardsmith.ShardsmithError, Exception)
    with pytest.raises(shardsmith.ShardsmithError) as err:
        shardsmith.verify(missing)
    assert str(err.value) == f"path `{missing}` does not exist"
    with pytest.raises(shardsmith.ShardsmithError, match="does not exist"):
        shardsmith.manifest(missing)
    with pytest.raises(shardsmith.ShardsmithError, match="does not exist"):
        shardsmith.audit(missing)
    if BIN:
        assert str(err.value) == cli_error("verify", missing)


def test_unreadable_manifest_raises(tmp_path):
    d = make_dataset(tmp_path / "ds")
    for manifest in (tmp_path / "gone.json", tmp_path):  # absent; a directory
        with pytest.raises(shardsmith.ShardsmithError) as err:
            shardsmith.verify(d, manifest=manifest)
        assert str(err.value).startswith(f"reading manifest `{manifest}`: ")
        if BIN:
            assert str(err.value) == cli_error("verify", d, "--manifest", manifest)


def test_bad_arguments_raise(tmp_path):
    d = make_dataset(tmp_path / "ds")
    with pytest.raises(shardsmith.ShardsmithError, match="64 hex digits"):
        shardsmith.verify(d, expect_root="abc")
    with pytest.raises(shardsmith.ShardsmithError, match="local paths only"):
        shardsmith.verify("s3://bucket/prefix")
    with pytest.raises(shardsmith.ShardsmithError, match="no checkpoint found"):
        shardsmith.audit(d)
    with pytest.raises(TypeError):
        shardsmith.verify(42)  # type: ignore[arg-type]


def test_a_damaged_manifest_is_a_finding_not_an_error(tmp_path):
    d = make_dataset(tmp_path / "ds")
    (d / "manifest.json").write_text("{not json")
    report = shardsmith.verify(d)
    assert "manifest_invalid" in [f.kind for f in report.findings]


# --- the GIL ------------------------------------------------------------------------


def test_verify_releases_the_gil(tmp_path):
    d = tmp_path / "big"
    d.mkdir()
    block = os.urandom(1 << 20)
    for i in range(4):
        (d / f"part-{i}.bin").write_bytes(block * 25)  # 4 x 25 MiB
    shardsmith.manifest(d)

    count = 0
    stamps = []
    stop = threading.Event()

    def spin():
        nonlocal count
        while not stop.is_set():
            count += 1
            if count % 1000 == 0:
                stamps.append(time.perf_counter())

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        time.sleep(0.05)
        start = time.perf_counter()
        before = count
        report = shardsmith.verify(d)
        after = count
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    assert report.ok and report.bytes_checked == 100 << 20
    # A call that held the GIL would let the thread run at most one switch interval
    # (5 ms) at its edges, and not at all in the middle half of the call.
    third = (end - start) / 4
    middle = [t for t in stamps if start + third <= t <= end - third]
    assert len(middle) >= 5, (end - start, len(middle), after - before)
    assert after - before >= 5000


# --- the pre-flight check of cli/python/README.md ------------------------------------


def preflight(path):
    report = shardsmith.verify(path)
    if not report.ok:
        raise SystemExit(f"refusing to train on damaged data:\n{report}")


def test_preflight_snippet(tmp_path):
    d = make_dataset(tmp_path / "ds")
    shardsmith.manifest(d)
    preflight(d)
    damage(d)
    with pytest.raises(SystemExit) as exit_:
        preflight(d)
    assert "hash_mismatch" in str(exit_.value.code)


def test_version():
    assert isinstance(shardsmith.__version__, str) and shardsmith.__version__.count(".") == 2
    if BIN:
        out = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout
        assert out.split()[1] == shardsmith.__version__
