//! What an audit found: each checkpoint's status and the run's survey.

use serde::Serialize;
use shardsmith_manifest::verify::VerifyReport;
use shardsmith_manifest::{Finding, FindingKind};

/// One checkpoint of the run and what verifying it found.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CheckpointStatus {
    /// Name in the run directory (`global_step10`, `checkpoint-500`, `ckpt_1000.pt`).
    pub name: String,
    /// Step or iteration number taken from the name.
    pub step: Option<u64>,
    /// True when verification found no error.
    pub intact: bool,
    /// Error-severity findings.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// Files read.
    pub files_checked: u64,
    /// Bytes read.
    pub bytes_checked: u64,
    /// Manifest the checkpoint was verified against, if it has one.
    pub manifest: Option<String>,
    /// Findings, paths relative to the checkpoint.
    pub findings: Vec<Finding>,
}

/// The survey of a run directory.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AuditReport {
    /// Checkpoints, oldest first (by the step number in their names).
    pub checkpoints: Vec<CheckpointStatus>,
    /// The newest checkpoint.
    pub newest: Option<String>,
    /// The newest checkpoint without errors: what a resume should load.
    pub newest_intact: Option<String>,
    /// Findings about the run directory itself: pointers, leftovers.
    pub findings: Vec<Finding>,
}

impl AuditReport {
    /// True when the newest checkpoint is intact and no run-level error was found.
    pub fn ok(&self) -> bool {
        self.newest.is_some()
            && self.newest == self.newest_intact
            && !self.findings.iter().any(Finding::is_error)
    }
}

/// The step number in a checkpoint name: the last run of digits (`global_step10` → 10,
/// `iter_0000010` → 10, `epoch=3-step=1000.ckpt` → 1000).
pub fn step_of(name: &str) -> Option<u64> {
    let stem = match name.rsplit_once('.') {
        Some((stem, ext)) if !ext.is_empty() && !ext.bytes().all(|b| b.is_ascii_digit()) => stem,
        _ => name,
    };
    let end = stem.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = stem[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    stem[start..end].parse().ok()
}

/// The status of checkpoint `name` from what verifying it found; `no_checkpoint_file`
/// when it is a directory without any checkpoint file.
pub(super) fn status_of(
    name: &str,
    mut report: VerifyReport,
    no_checkpoint_file: bool,
) -> CheckpointStatus {
    if no_checkpoint_file {
        report.findings.push(Finding::error(
            FindingKind::IncompleteSave,
            ".",
            "no checkpoint file in this directory (empty, or only leftovers of an interrupted save)",
        ));
    }
    CheckpointStatus {
        name: name.to_string(),
        step: step_of(name),
        intact: report.errors() == 0,
        errors: report.errors(),
        warnings: report.warnings(),
        files_checked: report.files_checked,
        bytes_checked: report.bytes_checked,
        manifest: report.manifest.clone(),
        findings: report.findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_from_names() {
        for (name, step) in [
            ("global_step10", Some(10)),
            ("iter_0000010", Some(10)),
            ("checkpoint-500", Some(500)),
            ("epoch=3-step=1000.ckpt", Some(1000)),
            ("ckpt_200.pt", Some(200)),
            ("release", None),
            ("last.ckpt", None),
        ] {
            assert_eq!(step_of(name), step, "{name}");
        }
    }
}
