"""shardsmith's Python API: verify datasets and checkpoints, write manifests, audit runs.

The same checks as the ``shardsmith`` command, run in-process by the same Rust code
(nothing is executed, nothing printed, the GIL is released while files are read)::

    import shardsmith

    report = shardsmith.verify("/data/shards")
    if not report.ok:
        raise SystemExit(f"dataset damaged:\\n{report}")

Functions:

- :func:`verify` -- ``shardsmith verify PATH``: returns a :class:`Report`.
- :func:`manifest` -- ``shardsmith manifest DIR``: writes ``manifest.json`` (and
  ``SHA256SUMS``) byte for byte as the CLI does; returns a :class:`Manifest`.
- :func:`audit` -- ``shardsmith audit RUN_DIR``: returns an :class:`AuditReport` naming
  the newest intact checkpoint.

Errors: problems found *in the data* never raise. They are :class:`Finding` objects in
the report (``report.ok`` is False when one of them is an error: the CLI's exit 1).
:class:`ShardsmithError` is raised only when a call cannot run at all (what the CLI
reports with exit 2): a path that does not exist, a manifest that cannot be read, a bad
argument, an I/O error, an object store URL (use the CLI for those). Its message is the
one the CLI prints after ``error:``.

Paths may be ``str``, ``bytes`` or any ``os.PathLike``. Only local paths are read.
"""

from __future__ import annotations

import json as _json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

from . import _native
from ._native import ShardsmithError

__all__ = [
    "AuditReport",
    "Checkpoint",
    "Finding",
    "Manifest",
    "ManifestFile",
    "Report",
    "ShardsmithError",
    "__version__",
    "audit",
    "manifest",
    "verify",
]

#: The version of shardsmith this module was built from (the CLI's ``--version``).
__version__: str = _native.__version__

ShardsmithError.__module__ = "shardsmith"

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def _path(value: PathArg, name: str) -> str:
    try:
        return os.fsdecode(value)
    except TypeError:
        raise TypeError(
            f"{name} must be a str, bytes or os.PathLike, not {type(value).__name__}"
        ) from None


class Finding:
    """One problem found in the data: a finding of ``shardsmith verify``, not an error.

    Attributes:
        kind: What kind of problem, exactly as the CLI's ``--json`` names it
            (``"hash_mismatch"``, ``"missing_file"``, ``"truncated"``, ...; see the
            list of kinds in manifest/README.md).
        severity: ``"error"`` (the data is not whole, or readers will misread it) or
            ``"warning"`` (worth knowing; readers still get the data).
        file: The file concerned, relative to the path checked (``"."`` for the
            dataset as a whole); the CLI's ``path``.
        offset: Byte offset where the problem starts, or None when not known.
        end: Byte offset where the affected range ends (exclusive), or None.
        expected: The expected value (a digest, a size, a count), or None.
        actual: The value found, or None.
        message: One-line explanation.

    ``str(finding)`` is the line the CLI prints after ``error:`` or ``warning:``.
    """

    __slots__ = ("kind", "severity", "file", "offset", "end", "expected", "actual", "message", "_text", "_dict")

    kind: str
    severity: str
    file: str
    offset: Optional[int]
    end: Optional[int]
    expected: Optional[str]
    actual: Optional[str]
    message: str

    def __init__(self, data: Dict[str, Any], text: str) -> None:
        self.kind = data["kind"]
        self.severity = data["severity"]
        self.file = data["path"]
        self.offset = data.get("offset")
        self.end = data.get("end")
        self.expected = data.get("expected")
        self.actual = data.get("actual")
        self.message = data["message"]
        self._text = text
        self._dict = data

    @property
    def is_error(self) -> bool:
        """True for an error-severity finding (one makes ``Report.ok`` False)."""
        return self.severity == "error"

    def to_dict(self) -> Dict[str, Any]:
        """The finding as the CLI's ``--json`` gives it: ``kind``, ``severity``,
        ``path``, ``message``, and ``offset``, ``end``, ``expected``, ``actual`` when
        known."""
        return dict(self._dict)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        where = ""
        if self.offset is not None:
            where = f", offset={self.offset}" + (f", end={self.end}" if self.end is not None else "")
        return f"Finding(kind={self.kind!r}, severity={self.severity!r}, file={self.file!r}{where})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and self._dict == other._dict

    def __hash__(self) -> int:
        return hash((self.kind, self.severity, self.file, self.offset, self.message))


def _findings(items: List[Dict[str, Any]], texts: List[str]) -> List[Finding]:
    return [Finding(item, text) for item, text in zip(items, texts)]


class _Reported:
    """What the reports share: the CLI's ``--json`` object behind them."""

    __slots__ = ("_report",)
    _report: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        """The CLI's ``--json`` report of the same call, as a dict (a deep copy):
        the same keys and values, ``seconds`` being this call's."""
        return _json.loads(_json.dumps(self._report))

    def json(self, indent: Optional[int] = 2) -> str:
        """:meth:`to_dict` as JSON text (keys sorted, as the CLI prints them)."""
        return _json.dumps(self._report, indent=indent, sort_keys=True, ensure_ascii=False)


class Report(_Reported):
    """What :func:`verify` found. Verification problems are its :attr:`findings`.

    Attributes:
        ok: True when no finding is an error (the CLI's exit 0; warnings allowed).
            ``bool(report)`` is the same.
        findings: Every :class:`Finding`, sorted by file and offset.
        errors: Number of error-severity findings.
        warnings: Number of warning-severity findings.
        files_checked: Files read.
        bytes_checked: Bytes read.
        samples: Samples counted in shards.
        tokens: Tokens counted in token files.
        documents: Documents counted in token files.
        root_sha256: The root digest recomputed from the manifest, or None without one.
        manifest: The manifest verified against (``"manifest.json"``, or the path
            given), or None without one.
        notes: Remarks on what could not be checked.
        checked: What the files were checked against, as counts: ``manifest``,
            ``sums``, ``signature``, ``structure``, ``unchecked`` (and
            ``unchecked_examples``).
        path: The path verified, as given.
        seconds: Wall-clock seconds the call took.
    """

    __slots__ = (
        "ok", "findings", "errors", "warnings", "files_checked", "bytes_checked",
        "samples", "tokens", "documents", "root_sha256", "manifest", "notes",
        "checked", "path", "seconds",
    )

    ok: bool
    findings: List[Finding]
    errors: int
    warnings: int
    files_checked: int
    bytes_checked: int
    samples: int
    tokens: int
    documents: int
    root_sha256: Optional[str]
    manifest: Optional[str]
    notes: List[str]
    checked: Dict[str, Any]
    path: str
    seconds: float

    def __init__(self, payload: Dict[str, Any]) -> None:
        r = payload["report"]
        self._report = r
        self.ok = r["ok"]
        self.findings = _findings(r["findings"], payload["texts"])
        self.errors = r["errors"]
        self.warnings = r["warnings"]
        self.files_checked = r["files_checked"]
        self.bytes_checked = r["bytes_checked"]
        self.samples = r["samples"]
        self.tokens = r["tokens"]
        self.documents = r["documents"]
        self.root_sha256 = r["root_sha256"]
        self.manifest = r["manifest"]
        self.notes = list(r["notes"])
        self.checked = dict(r["checked"])
        self.path = r["path"]
        self.seconds = r["seconds"]

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return (
            f"Report(path={self.path!r}, ok={self.ok}, errors={self.errors}, "
            f"warnings={self.warnings}, files_checked={self.files_checked}, "
            f"bytes_checked={self.bytes_checked})"
        )

    def __str__(self) -> str:
        """The findings as the CLI lists them, then its verdict line."""
        lines = [f"{'error' if f.is_error else 'warning'}: {f}" for f in self.findings]
        if not self.ok:
            lines.append(f"FAILED: {self.errors} problem(s), {self.warnings} warning(s)")
        elif self.warnings:
            lines.append(f"OK with {self.warnings} warning(s)")
        else:
            lines.append("OK: no problems found")
        return "\n".join(lines)


class ManifestFile(NamedTuple):
    """One file a manifest lists."""

    #: Relative path, ``/``-separated.
    path: str
    #: Size in bytes.
    size: int
    #: SHA-256, 64 lower-case hex digits.
    sha256: str


class Manifest(_Reported):
    """What :func:`manifest` wrote.

    Attributes:
        path: The manifest file written (``DIR/manifest.json``, or ``output``).
        root_sha256: The manifest's root digest (pin it: ``verify(...,
            expect_root=...)``).
        file_count: Number of files listed.
        bytes: Bytes of the files listed.
        samples: Samples counted in the tar shards walked, or None when there were none.
        tensors: Tensors recorded with ``tensors=True``, or None without it.
        files: Every file listed, as :class:`ManifestFile` ``(path, size, sha256)``.
        skipped: Files left out, as ``(path, reason)``.
        warnings: What the walk of shards and checkpoints found, as :class:`Finding`
            (a damaged shard is still hashed and listed).
        tensors_not_recorded: With ``tensors=True``, checkpoint files whose tensors
            were not recorded, as ``(path, reason)``.
        seconds: Wall-clock seconds the call took.
    """

    __slots__ = (
        "path", "root_sha256", "file_count", "bytes", "samples", "tensors", "files",
        "skipped", "warnings", "tensors_not_recorded", "seconds",
    )

    path: str
    root_sha256: str
    file_count: int
    bytes: int
    samples: Optional[int]
    tensors: Optional[int]
    files: List[ManifestFile]
    skipped: List[Tuple[str, str]]
    warnings: List[Finding]
    tensors_not_recorded: List[Tuple[str, str]]
    seconds: float

    def __init__(self, payload: Dict[str, Any]) -> None:
        r = payload["report"]
        self._report = r
        self.path = r["manifest"]
        self.root_sha256 = r["root_sha256"]
        self.file_count = r["files"]
        self.bytes = r["bytes"]
        self.samples = r["samples"]
        self.tensors = r["tensors"]
        self.files = [ManifestFile(*f) for f in payload["files"]]
        self.skipped = [(s["path"], s["reason"]) for s in r["skipped"]]
        self.warnings = _findings(r["warnings"], payload["texts"])
        self.tensors_not_recorded = [tuple(n) for n in payload["not_recorded"]]  # type: ignore[misc]
        self.seconds = r["seconds"]

    def __repr__(self) -> str:
        return (
            f"Manifest(path={self.path!r}, files={self.file_count}, bytes={self.bytes}, "
            f"root_sha256={self.root_sha256!r})"
        )


class Checkpoint:
    """One checkpoint of a run, as :func:`audit` found it.

    Attributes:
        name: Its name in the run directory (``global_step10``, ``checkpoint-500``,
            ``ckpt_1000.pt``).
        step: The step number taken from the name, or None.
        intact: True when verifying it found no error.
        errors: Number of error-severity findings.
        warnings: Number of warnings.
        files_checked: Files read.
        bytes_checked: Bytes read.
        manifest: The manifest it was verified against, or None.
        findings: Its :class:`Finding` objects, paths relative to the checkpoint.
    """

    __slots__ = (
        "name", "step", "intact", "errors", "warnings", "files_checked",
        "bytes_checked", "manifest", "findings", "_dict",
    )

    name: str
    step: Optional[int]
    intact: bool
    errors: int
    warnings: int
    files_checked: int
    bytes_checked: int
    manifest: Optional[str]
    findings: List[Finding]

    def __init__(self, data: Dict[str, Any], texts: List[str]) -> None:
        self._dict = data
        self.name = data["name"]
        self.step = data["step"]
        self.intact = data["intact"]
        self.errors = data["errors"]
        self.warnings = data["warnings"]
        self.files_checked = data["files_checked"]
        self.bytes_checked = data["bytes_checked"]
        self.manifest = data["manifest"]
        self.findings = _findings(data["findings"], texts)

    def to_dict(self) -> Dict[str, Any]:
        """The checkpoint as the CLI's ``audit --json`` lists it."""
        return _json.loads(_json.dumps(self._dict))

    def __repr__(self) -> str:
        return (
            f"Checkpoint(name={self.name!r}, intact={self.intact}, errors={self.errors}, "
            f"warnings={self.warnings})"
        )


class AuditReport(_Reported):
    """What :func:`audit` found in a run directory.

    Attributes:
        ok: True when the newest checkpoint is intact and every pointer file is right
            (the CLI's exit 0). ``bool(report)`` is the same.
        newest: The newest checkpoint's name, or None.
        newest_intact: The newest intact checkpoint's name (what a resume should
            load), or None when none is intact.
        resume_from: The path of the newest intact checkpoint (``run_dir`` joined with
            its name), or None.
        checkpoints: Every :class:`Checkpoint`, oldest first (by the step in its name).
        findings: Findings about the run directory itself (pointer files such as
            ``latest``, leftovers of killed saves), as :class:`Finding`.
        bytes_checked: Bytes read over every checkpoint.
        run_dir: The run directory, as given.
        seconds: Wall-clock seconds the call took.
    """

    __slots__ = (
        "ok", "newest", "newest_intact", "resume_from", "checkpoints", "findings",
        "bytes_checked", "run_dir", "seconds",
    )

    ok: bool
    newest: Optional[str]
    newest_intact: Optional[str]
    resume_from: Optional[str]
    checkpoints: List[Checkpoint]
    findings: List[Finding]
    bytes_checked: int
    run_dir: str
    seconds: float

    def __init__(self, payload: Dict[str, Any]) -> None:
        r = payload["report"]
        self._report = r
        self.ok = r["ok"]
        self.newest = r["newest"]
        self.newest_intact = r["newest_intact"]
        self.resume_from = r["resume_from"]
        self.checkpoints = [
            Checkpoint(c, texts) for c, texts in zip(r["checkpoints"], payload["checkpoint_texts"])
        ]
        self.findings = _findings(r["findings"], payload["texts"])
        self.bytes_checked = r["bytes_checked"]
        self.run_dir = r["run_dir"]
        self.seconds = r["seconds"]

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return (
            f"AuditReport(run_dir={self.run_dir!r}, ok={self.ok}, "
            f"checkpoints={len(self.checkpoints)}, newest_intact={self.newest_intact!r})"
        )


def verify(
    path: PathArg,
    manifest: Optional[PathArg] = None,
    deep: bool = False,
    expect_root: Optional[str] = None,
    *,
    allow_empty: bool = False,
) -> Report:
    """Checks a dataset or checkpoint (a directory or one file) for damage:
    ``shardsmith verify PATH``.

    Every file is read once: its size and SHA-256 against the manifest
    (``PATH/manifest.json`` or ``manifest``), its structure by its format (tar shards,
    token files, safetensors, torch zips and pickles, DCP, ...). A Hugging Face hub
    cache is checked blob by blob against the names.

    Args:
        path: Dataset directory, single file, or Hugging Face cache.
        manifest: Manifest to check against instead of ``PATH/manifest.json``
            (the CLI's ``--manifest``).
        deep: Also count NaN (an error) and Inf (a warning) in every float tensor of a
            checkpoint (the CLI's ``--scan-values``).
        expect_root: The manifest's root digest must be this (64 hex digits): catches
            a manifest replaced together with the data (``--expect-root``).
        allow_empty: Accept a path with nothing to verify instead of reporting it as
            a ``nothing_to_verify`` error (``--allow-empty``).

    Returns:
        A :class:`Report`; ``report.ok`` is False when a finding is an error.

    Raises:
        ShardsmithError: The verification could not run (the CLI's exit 2): ``path``
            does not exist, ``manifest`` cannot be read, ``expect_root`` is not 64 hex
            digits, an object store URL.
    """
    payload = _native.verify(
        _path(path, "path"),
        None if manifest is None else _path(manifest, "manifest"),
        bool(deep),
        expect_root,
        bool(allow_empty),
    )
    return Report(_json.loads(payload))


def manifest(
    path: PathArg,
    output: Optional[PathArg] = None,
    tensors: bool = False,
    *,
    force: bool = False,
    accept_unfinished: bool = False,
) -> Manifest:
    """Hashes every file of a directory into ``manifest.json`` and ``SHA256SUMS``:
    ``shardsmith manifest DIR``, writing the same bytes.

    Tar shards are walked and their sample counts and keys recorded, so a later
    :func:`verify` checks them too. Each file is written to a temporary file, synced
    and renamed: a reader never sees half a manifest.

    Args:
        path: The directory to describe.
        output: Write the manifest to this file instead of ``DIR/manifest.json`` (then
            no ``SHA256SUMS`` is written); verify with ``verify(DIR, manifest=output)``.
        tensors: Also record every tensor of every checkpoint file: name, dtype, shape
            and the SHA-256 of its canonical form (``--tensors``).
        force: Replace an existing manifest (``--force``); without it an existing one
            raises ShardsmithError.
        accept_unfinished: Describe a directory that holds an unfinished pack or
            tokenize run as it is (``--accept-unfinished``); without it such a
            directory raises ShardsmithError (finish the run instead: re-run it).

    Returns:
        A :class:`Manifest` describing what was written.

    Raises:
        ShardsmithError: ``path`` is not a directory, the manifest exists and
            ``force`` is False, it holds an unfinished run and ``accept_unfinished`` is
            False, a file name is not UTF-8, a write failed.
    """
    payload = _native.manifest(
        _path(path, "path"),
        None if output is None else _path(output, "output"),
        bool(tensors),
        bool(force),
        bool(accept_unfinished),
    )
    return Manifest(_json.loads(payload))


def audit(run_dir: PathArg, deep: bool = False) -> AuditReport:
    """Surveys a training run's checkpoints and names the newest intact one:
    ``shardsmith audit RUN_DIR``.

    Every checkpoint (``global_stepN/``, ``iter_NNNNNNN/``, ``checkpoint-N/``, DCP
    directories, ``*.pt``, ``*.safetensors``, ...) is verified as :func:`verify` would,
    and pointer files (DeepSpeed ``latest``, Megatron's tracker, a ``latest`` symlink)
    are checked against what they name.

    Args:
        run_dir: Local directory holding the run's checkpoints.
        deep: Also count NaN and Inf in every float tensor (``--scan-values``).

    Returns:
        An :class:`AuditReport`; ``report.resume_from`` is the checkpoint to resume from.

    Raises:
        ShardsmithError: ``run_dir`` is not a directory, holds no checkpoint, is a
            Hugging Face cache (use :func:`verify`) or an object store URL (use the CLI).
    """
    payload = _native.audit(_path(run_dir, "run_dir"), bool(deep))
    return AuditReport(_json.loads(payload))
