//! `audit RUN_DIR`: every checkpoint of a training run verified (in parallel, each file
//! read once), its status, the newest intact one named, and the pointer files
//! (`latest`, Megatron's tracker, a `latest` symlink) checked against what they name.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use shardsmith_manifest::verify::{VerifyOptions, verify_path};
use shardsmith_manifest::{Error, Finding, FindingKind, Result, walk};

use shardsmith_manifest::InspectorFactory;

use super::{is_checkpoint_name, is_temp_leftover};

/// One checkpoint of the run and what verifying it found.
#[derive(Clone, Debug, Serialize)]
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

struct Pointer {
    name: String,
    target: Option<String>,
    problem: Option<String>,
}

/// Surveys `run_dir`, verifying each checkpoint with `inspectors` (the caller's
/// registry of every format, so that a checkpoint holding other files is checked as
/// `verify` would). `progress_total` receives each checkpoint's byte count as it is
/// discovered, `progress` every block read.
pub fn audit_run(
    run_dir: &Path,
    inspectors: &(dyn InspectorFactory + Sync),
    progress_total: &(dyn Fn(u64) + Sync),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AuditReport> {
    let entries = std::fs::read_dir(run_dir).map_err(|e| Error::io("reading", run_dir, e))?;
    let mut names: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("reading", run_dir, e))?;
        names.push((
            entry.file_name().to_string_lossy().into_owned(),
            entry.path(),
        ));
    }
    names.sort();
    let mut report = AuditReport::default();
    let mut pointers = Vec::new();
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    for (name, path) in names {
        let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if link && path.exists() {
            let target = std::fs::read_link(&path)
                .ok()
                .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()));
            pointers.push(Pointer {
                name,
                target,
                problem: None,
            });
            continue;
        }
        if link && !path.exists() {
            report.findings.push(Finding::error(
                FindingKind::BadPointer,
                &name,
                "symbolic link to a checkpoint that does not exist",
            ));
            continue;
        }
        match name.as_str() {
            "latest" | "latest_universal" | "latest_checkpointed_iteration.txt" => {
                pointers.push(read_pointer(&name, &path));
                continue;
            }
            _ => {}
        }
        if is_temp_leftover(&name) {
            report.findings.push(Finding::warning(
                FindingKind::LeftoverTempFile,
                &name,
                "temporary file or directory of an interrupted save",
            ));
            continue;
        }
        let is_candidate = if path.is_dir() {
            !name.starts_with('.') && (step_of(&name).is_some() || has_checkpoint_files(&path))
        } else {
            is_checkpoint_name(&name) || sniff_zip(&path)
        };
        if is_candidate {
            candidates.push((name, path));
        }
    }
    candidates.sort_by_key(|(name, _)| (step_of(name), name.clone()));
    report.checkpoints = candidates
        .par_iter()
        .map(|(name, path)| check_one(name, path, inspectors, progress_total, progress))
        .collect::<Result<Vec<_>>>()?;
    report.newest = report.checkpoints.last().map(|c| c.name.clone());
    report.newest_intact = report
        .checkpoints
        .iter()
        .rev()
        .find(|c| c.intact)
        .map(|c| c.name.clone());
    for p in pointers {
        pointer_findings(&p, &mut report);
    }
    Ok(report)
}

fn read_pointer(name: &str, path: &Path) -> Pointer {
    let text = match std::fs::read(path) {
        Ok(bytes) if bytes.len() <= 4096 => String::from_utf8_lossy(&bytes).trim().to_string(),
        Ok(_) => {
            return Pointer {
                name: name.into(),
                target: None,
                problem: Some("pointer file is larger than 4 KiB: not a pointer".into()),
            };
        }
        Err(e) => {
            return Pointer {
                name: name.into(),
                target: None,
                problem: Some(format!("cannot be read: {e}")),
            };
        }
    };
    if name == "latest_checkpointed_iteration.txt" {
        return match text.parse::<u64>() {
            Ok(n) => Pointer {
                name: name.into(),
                target: Some(format!("iter_{n:07}")),
                problem: None,
            },
            Err(_) if text == "release" => Pointer {
                name: name.into(),
                target: Some("release".into()),
                problem: None,
            },
            Err(_) => Pointer {
                name: name.into(),
                target: None,
                problem: Some(format!(
                    "holds {text:?}, neither an iteration number nor `release`"
                )),
            },
        };
    }
    if text.is_empty() || text.contains(['/', '\n']) {
        return Pointer {
            name: name.into(),
            target: None,
            problem: Some(format!("holds {text:?}, not a checkpoint tag")),
        };
    }
    Pointer {
        name: name.into(),
        target: Some(text),
        problem: None,
    }
}

fn pointer_findings(p: &Pointer, report: &mut AuditReport) {
    if let Some(problem) = &p.problem {
        report.findings.push(Finding::error(
            FindingKind::BadPointer,
            &p.name,
            problem.clone(),
        ));
        return;
    }
    let Some(target) = &p.target else { return };
    let resume = match &report.newest_intact {
        Some(n) => format!("; the newest intact checkpoint is `{n}`"),
        None => "; no checkpoint of the run is intact".into(),
    };
    match report.checkpoints.iter().position(|c| &c.name == target) {
        None => report.findings.push(
            Finding::error(
                FindingKind::BadPointer,
                &p.name,
                format!("points at `{target}`, which does not exist: a resume would fail{resume}"),
            )
            .values(target, "nothing"),
        ),
        Some(i) if !report.checkpoints[i].intact => report.findings.push(Finding::error(
            FindingKind::BadPointer,
            &p.name,
            format!(
                "points at `{target}`, which is broken ({} error(s)): a resume would load damaged data{resume}",
                report.checkpoints[i].errors
            ),
        )),
        Some(i) => {
            let newer = report.checkpoints[i + 1..].iter().rev().find(|c| c.intact);
            if let Some(newer) = newer {
                report.findings.push(Finding::warning(
                    FindingKind::BadPointer,
                    &p.name,
                    format!(
                        "points at `{target}`, but `{}` is newer and intact: a resume would lose progress",
                        newer.name
                    ),
                ));
            }
        }
    }
}

fn has_checkpoint_files(dir: &Path) -> bool {
    walk::walk(dir, &|_, _| true).is_ok_and(|w| {
        w.files.iter().any(|f| {
            let rel = f.rel.to_string_lossy();
            is_checkpoint_name(&rel) && !is_temp_leftover(&rel)
        })
    })
}

fn sniff_zip(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"PK\x03\x04")
}

fn check_one(
    name: &str,
    path: &Path,
    inspectors: &(dyn InspectorFactory + Sync),
    progress_total: &(dyn Fn(u64) + Sync),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<CheckpointStatus> {
    let verify = VerifyOptions {
        manifest: None,
        expect_root: None,
        inspectors,
        // A directory without checkpoint files gets its own finding below.
        allow_empty: true,
        collect_digests: false,
        digest_check: None,
    };
    let mut report = verify_path(path, &verify, progress_total, progress)?;
    if path.is_dir() && !has_checkpoint_files(path) {
        report.findings.push(Finding::error(
            FindingKind::IncompleteSave,
            ".",
            "no checkpoint file in this directory (empty, or only leftovers of an interrupted save)",
        ));
    }
    Ok(CheckpointStatus {
        name: name.to_string(),
        step: step_of(name),
        intact: report.errors() == 0,
        errors: report.errors(),
        warnings: report.warnings(),
        files_checked: report.files_checked,
        bytes_checked: report.bytes_checked,
        manifest: report.manifest.clone(),
        findings: report.findings,
    })
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
