//! The three calls of the Python API in plain Rust, without Python: each resolves the
//! CLI command's settings ([`shardsmith_cli::commands`]) from the call's arguments, runs
//! the same `run`, and returns the command's `--json` report (under `report`) with the
//! one-line text of every finding beside it (the text the CLI prints after `error: ` or
//! `warning: `), or the message of the error with which the CLI exits 2. The checks,
//! the work and the report are the CLI's; only the words that name an argument are
//! Python's (`force=True` for `--force`). The Python module ([`crate`]) only converts
//! arguments and raises.
//!
//! Kept apart from the bindings so that it is tested by `cargo test`.

use std::path::Path;

use serde_json::{Value, json};
use shardsmith_cli::args::{AuditArgs, ManifestArgs, VerifyArgs};
use shardsmith_cli::caller::Caller;
use shardsmith_cli::commands::{audit, manifest as manifest_cmd, verify as verify_cmd};
use shardsmith_cli::progress::NoProgress;
use shardsmith_cli::refusal;
use shardsmith_manifest::{ErrorKind, Finding};

/// The version every report names (the workspace's).
pub const VERSION: &str = shardsmith_cli::report::VERSION;

/// Why a call could not run (the CLI's exit 2): the error's stable kind, as `--json`
/// reports it, and the message the CLI prints after `error: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: ErrorKind,
    pub message: String,
}

impl From<(ErrorKind, String)> for Refusal {
    fn from((kind, message): (ErrorKind, String)) -> Self {
        Self { kind, message }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

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
    let args = VerifyArgs {
        path: path.to_path_buf(),
        manifest: manifest.map(Path::to_path_buf),
        expect_root: expect_root.map(str::to_string),
        scan_values,
        signature: None,
        public_key: None,
        allow_empty,
        range: Vec::new(),
    };
    let settings = verify_cmd::Settings::resolve(&args, Caller::Python)
        .map_err(|e| Refusal::from(refusal(&e)))?;
    let verified =
        verify_cmd::run(&settings, &NoProgress).map_err(|e| Refusal::from(refusal(&e)))?;
    Ok(json!({
        "report": to_value(&verified.report()),
        "texts": texts(&verified.report.findings),
    }))
}

/// `shardsmith manifest DIR [--output FILE] [--tensors] [--force] [--accept-unfinished]
/// --json`: `{"report": <the --json report>, "texts": [the walk's findings' texts],
/// "files": [[path, size, sha256], ...], "not_recorded": [[path, reason], ...]}`.
/// Writes the same bytes as the CLI.
pub fn manifest(
    dir: &Path,
    output: Option<&Path>,
    tensors: bool,
    force: bool,
    accept_unfinished: bool,
) -> Result<Value, Refusal> {
    let args = ManifestArgs {
        dir: dir.to_path_buf(),
        output: output.map(Path::to_path_buf),
        force,
        tensors,
        accept_unfinished,
    };
    let settings = manifest_cmd::Settings::resolve(&args, Caller::Python)
        .map_err(|e| Refusal::from(refusal(&e)))?;
    let written =
        manifest_cmd::run(&settings, &NoProgress).map_err(|e| Refusal::from(refusal(&e)))?;
    let files = &written.manifest.files;
    Ok(json!({
        "report": to_value(&written.report()),
        "texts": texts(&written.findings),
        "files": files.iter().map(|f| json!([f.path, f.size, f.sha256])).collect::<Vec<_>>(),
        "not_recorded": written.not_recorded.iter().map(|n| json!([n.path, n.reason])).collect::<Vec<_>>(),
    }))
}

/// `shardsmith audit RUN_DIR [--scan-values] --json` of a local run directory:
/// `{"report": <the --json report>, "texts": [the run's findings' texts],
/// "checkpoint_texts": [[each checkpoint's findings' texts], ...]}`.
pub fn audit(run_dir: &Path, scan_values: bool) -> Result<Value, Refusal> {
    let args = AuditArgs {
        run_dir: run_dir.to_path_buf(),
        scratch: None,
        scan_values,
    };
    let settings =
        audit::Settings::resolve(&args, Caller::Python).map_err(|e| Refusal::from(refusal(&e)))?;
    let audited =
        match audit::run(&settings, &NoProgress).map_err(|e| Refusal::from(refusal(&e)))? {
            audit::Audited::Run(audited) => audited,
            // Settings::resolve refuses a Hugging Face cache for the Python caller.
            audit::Audited::Cache(_) => {
                return Err(Refusal {
                    kind: ErrorKind::Unsupported,
                    message: "a Hugging Face cache is audited by the CLI".into(),
                });
            }
        };
    let checkpoints = &audited.report.checkpoints;
    Ok(json!({
        "report": to_value(&audited.report()),
        "texts": texts(&audited.report.findings),
        "checkpoint_texts": checkpoints.iter().map(|c| texts(&c.findings)).collect::<Vec<_>>(),
    }))
}

fn to_value(report: &impl serde::Serialize) -> Value {
    serde_json::to_value(report).expect("a report serialises")
}

/// Each finding as the CLI prints it after `error: ` or `warning: `.
fn texts(findings: &[Finding]) -> Vec<String> {
    findings.iter().map(Finding::to_string).collect()
}

#[cfg(test)]
mod tests;
