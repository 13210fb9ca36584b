//! The three calls of the Python API in plain Rust, without Python: each makes the
//! library calls the CLI's command makes and returns what the command's `--json` prints
//! (under `report`), with the one-line text of every finding beside it (the text the CLI
//! prints after `error: ` or `warning: `), or the message of the error with which the
//! CLI exits 2. The Python module ([`crate`]) only converts arguments and raises.
//!
//! Kept apart from the bindings so that it is tested by `cargo test`, and so that what
//! the CLI checks before it starts (a path that must exist, an object store URL, a
//! Hugging Face cache) is checked here in the same order and with the same words.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use shardsmith_checkpoint::audit::audit_run;
use shardsmith_checkpoint::hfcache;
use shardsmith_inspect::{CheckpointOptions, Inspectors, InspectorsWith};
use shardsmith_manifest::scan::{scan_directory, write_directory_manifest};
use shardsmith_manifest::verify::{VerifyOptions, VerifyReport, verify_path};
use shardsmith_manifest::{Finding, MANIFEST_FILE};

/// The version every report names (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a call could not run: the message the CLI prints after `error: ` (exit 2).
pub type Refusal = String;

/// `shardsmith verify PATH [--manifest FILE] [--scan-values] [--expect-root HEX]
/// [--allow-empty] --json`: `{"report": <the --json report>, "texts": [one line per
/// finding, in the report's order]}`.
pub fn verify(
    path: &Path,
    manifest: Option<&Path>,
    scan_values: bool,
    expect_root: Option<&str>,
    allow_empty: bool,
) -> Result<Value, Refusal> {
    local(path, "verify")?;
    let expect_root = expect_root.map(parse_root).transpose()?;
    need_path(path, "path")?;
    let started = Instant::now();
    let report = if manifest.is_none() && hfcache::cache_repos(path).is_some() {
        if expect_root.is_some() {
            return Err(
                "expect_root takes a dataset with a manifest; a Hugging Face cache has none".into(),
            );
        }
        hfcache::verify_cache(path, &|_| {}, &|_| {})
            .ok_or_else(|| format!("`{}` is not a Hugging Face cache", path.display()))?
            .verify_report(allow_empty)
    } else {
        let inspectors = InspectorsWith(CheckpointOptions { scan_values });
        let options = VerifyOptions {
            manifest: manifest.map(Path::to_path_buf),
            expect_root,
            inspectors: &inspectors,
            allow_empty,
            collect_digests: false,
            digest_check: None,
        };
        verify_path(path, &options, &|_| {}, &|_| {}).map_err(|e| message(&e))?
    };
    Ok(verify_json(path, &report, started.elapsed().as_secs_f64()))
}

/// The `verify --json` report of `report` (keys sorted, as the CLI prints them) and the
/// findings' texts.
pub fn verify_json(path: &Path, report: &VerifyReport, seconds: f64) -> Value {
    json!({
        "report": {
            "bytes_checked": report.bytes_checked,
            "checked": report.checked,
            "command": "verify",
            "documents": report.documents,
            "errors": report.errors(),
            "files_checked": report.files_checked,
            "findings": report.findings,
            "manifest": report.manifest,
            "notes": report.notes,
            "ok": report.errors() == 0,
            "path": path.display().to_string(),
            "root_sha256": report.root_sha256,
            "samples": report.samples,
            "seconds": seconds,
            "signature": null,
            "tokens": report.tokens,
            "version": VERSION,
            "warnings": report.warnings(),
        },
        "texts": texts(&report.findings),
    })
}

/// `shardsmith manifest DIR [--output FILE] [--tensors] [--force] --json`: `{"report":
/// <the --json report>, "texts": [the walk's findings' texts], "files": [[path, size,
/// sha256], ...], "not_recorded": [[path, reason], ...]}`. Writes the same bytes as the
/// CLI, through the same library call.
pub fn manifest(
    dir: &Path,
    output: Option<&Path>,
    tensors: bool,
    force: bool,
) -> Result<Value, Refusal> {
    local(dir, "manifest")?;
    need_directory(dir)?;
    if let Some(run) = shardsmith_manifest::unfinished::in_directory(dir) {
        return Err(format!(
            "`{}` holds {}; a manifest of it would pass part of a dataset off as the whole, and the run could no longer resume; {} (the CLI's `shardsmith manifest --accept-unfinished` describes the files as they are)",
            dir.display(),
            run.describe(),
            run.how_to_finish()
        ));
    }
    let target = output.map_or_else(|| dir.join(MANIFEST_FILE), Path::to_path_buf);
    if target.exists() && !force {
        return Err(format!(
            "`{}` already exists; pass force=True to replace it (or shardsmith.verify(`{}`) to check against it)",
            target.display(),
            dir.display()
        ));
    }
    let started = Instant::now();
    let mut scan = scan_directory(dir, &Inspectors, &|_| {}, &|_| {}).map_err(|e| message(&e))?;
    let mut not_recorded = Vec::new();
    if tensors {
        not_recorded = shardsmith_checkpoint::tensors::recorded::record(dir, &mut scan.manifest)
            .map_err(|e| message(&e))?;
    }
    let manifest = &scan.manifest;
    write_directory_manifest(dir, output, manifest).map_err(|e| message(&e))?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(json!({
        "report": {
            "bytes": manifest.totals.bytes,
            "command": "manifest",
            "files": manifest.totals.files,
            "manifest": target.display().to_string(),
            "root_sha256": manifest.root_sha256,
            "samples": manifest.totals.samples,
            "seconds": seconds,
            "skipped": manifest.skipped,
            "tensors": tensors.then(|| manifest.files.iter().map(|f| f.tensors.len() as u64).sum::<u64>()),
            "version": VERSION,
            "warnings": scan.findings,
        },
        "texts": texts(&scan.findings),
        "files": manifest.files.iter().map(|f| json!([f.path, f.size, f.sha256])).collect::<Vec<_>>(),
        "not_recorded": not_recorded.iter().map(|n| json!([n.path, n.reason])).collect::<Vec<_>>(),
    }))
}

/// `shardsmith audit RUN_DIR [--scan-values] --json` of a local run directory:
/// `{"report": <the --json report>, "texts": [the run's findings' texts],
/// "checkpoint_texts": [[each checkpoint's findings' texts], ...]}`.
pub fn audit(run_dir: &Path, scan_values: bool) -> Result<Value, Refusal> {
    local(run_dir, "audit")?;
    need_directory(run_dir)?;
    if hfcache::cache_repos(run_dir).is_some() {
        return Err(format!(
            "`{}` is a Hugging Face cache: shardsmith.verify() checks it (every blob against its name, every link and ref); for the audit of its snapshots use the CLI (`shardsmith audit {}`)",
            run_dir.display(),
            run_dir.display()
        ));
    }
    let started = Instant::now();
    let inspectors = InspectorsWith(CheckpointOptions { scan_values });
    let report = audit_run(run_dir, &inspectors, &|_| {}, &|_| {}).map_err(|e| message(&e))?;
    if report.checkpoints.is_empty() {
        return Err(format!(
            "no checkpoint found in `{}` (expected subdirectories such as global_step10/, iter_0000010/, checkpoint-500/, or files such as *.pt, *.safetensors)",
            run_dir.display()
        ));
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes: u64 = report.checkpoints.iter().map(|c| c.bytes_checked).sum();
    let resume = report
        .newest_intact
        .as_ref()
        .map(|n| run_dir.join(n).display().to_string());
    Ok(json!({
        "report": {
            "bytes_checked": bytes,
            "checkpoints": report.checkpoints,
            "command": "audit",
            "findings": report.findings,
            "newest": report.newest,
            "newest_intact": report.newest_intact,
            "ok": report.ok(),
            "resume_from": resume,
            "run_dir": run_dir.display().to_string(),
            "seconds": seconds,
            "version": VERSION,
        },
        "texts": texts(&report.findings),
        "checkpoint_texts": report.checkpoints.iter().map(|c| texts(&c.findings)).collect::<Vec<_>>(),
    }))
}

/// Each finding as the CLI prints it after `error: ` or `warning: `.
fn texts(findings: &[Finding]) -> Vec<String> {
    findings.iter().map(Finding::to_string).collect()
}

/// An error's message as the CLI prints it: the error and each cause it does not
/// already say, joined with `: `.
pub fn message(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cause = Some(err);
    while let Some(e) = cause {
        let text = e.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cause = e.source();
    }
    out
}

/// Object store URLs are the CLI's: this API reads local paths only.
fn local(path: &Path, command: &str) -> Result<(), Refusal> {
    match path.to_str() {
        Some(text) if text.contains("://") => Err(format!(
            "`{text}` is a URL: the Python API reads local paths only; use the CLI (`shardsmith {command} {text}`), or `shardsmith stage` it to a local directory first"
        )),
        _ => Ok(()),
    }
}

/// `path` must exist (the CLI's check, in its words).
fn need_path(path: &Path, role: &str) -> Result<(), Refusal> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    Err(format!("{role} `{}` does not exist", path.display()))
}

/// `path` must be a directory (the CLI's check, in its words).
fn need_directory(path: &Path) -> Result<(), Refusal> {
    if path.is_dir() {
        Ok(())
    } else if std::fs::symlink_metadata(path).is_err() {
        Err(format!("`{}` does not exist", path.display()))
    } else {
        Err(format!("`{}` is not a directory", path.display()))
    }
}

/// A root digest: 64 hex digits, compared in lower case (as `--expect-root` takes it).
fn parse_root(text: &str) -> Result<String, Refusal> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(format!(
            "invalid value '{text}' for expect_root: a root digest is 64 hex digits (the manifest's root_sha256)"
        ))
    }
}

#[cfg(test)]
mod tests;
