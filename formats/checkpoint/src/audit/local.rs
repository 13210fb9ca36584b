//! The survey of a run directory on the local file system.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use shardsmith_manifest::verify::{VerifyOptions, verify_path};
use shardsmith_manifest::{Error, Finding, FindingKind, InspectorFactory, Result, walk};

use super::pointers::{POINTER_FILES, Pointer, finish, parse_pointer};
use super::report::{AuditReport, CheckpointStatus, status_of, step_of};
use crate::{is_checkpoint_name, is_temp_leftover};

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
        if POINTER_FILES.contains(&name.as_str()) {
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            pointers.push(parse_pointer(&name, size, &|| std::fs::read(&path)));
            continue;
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
    Ok(finish(report, &pointers))
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
    let report = verify_path(path, &verify_options(inspectors), progress_total, progress)?;
    Ok(status_of(
        name,
        report,
        path.is_dir() && !has_checkpoint_files(path),
    ))
}

/// How each checkpoint is verified, wherever it is: against its own manifest if it has
/// one, with `inspectors`. An empty directory is not a verification failure: it gets its
/// own `incomplete_save` finding.
pub fn verify_options(inspectors: &(dyn InspectorFactory + Sync)) -> VerifyOptions<'_> {
    VerifyOptions {
        manifest: None,
        expect_root: None,
        inspectors,
        allow_empty: true,
        collect_digests: false,
        digest_check: None,
    }
}
