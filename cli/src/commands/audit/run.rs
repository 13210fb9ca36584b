//! `audit`'s run and the outcome of a training run's audit.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use shardsmith_checkpoint::audit::{AuditReport, audit_listed, audit_run};
use shardsmith_inspect::{CheckpointOptions, InspectorsWith};

use super::settings::{Settings, Target};
use crate::commands::Status;
use crate::progress::Progress;
use shardsmith_manifest::ErrorKind;

/// What an audit found.
#[derive(Debug)]
pub enum Audited {
    /// A training run's checkpoints.
    Run(RunAudit),
    /// A Hugging Face cache's snapshots.
    Cache(super::hfcache::CacheAudit),
}

/// What the audit of a training run found.
#[derive(Debug)]
pub struct RunAudit {
    /// The run directory as given.
    pub run_dir: PathBuf,
    /// Every checkpoint and the run's own findings.
    pub report: AuditReport,
    /// For a run in an object store: checkpoints copied to the scratch directory to be
    /// checked, and their bytes.
    pub copied: Option<(u64, u64)>,
    /// Where they were copied.
    pub scratch: PathBuf,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

/// Audits what `settings` name, showing progress on `progress`.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Audited> {
    let started = Instant::now();
    if let Target::HfCache = settings.target {
        return super::hfcache::run(&settings.run_dir, progress).map(Audited::Cache);
    }
    let bar = progress.bytes_bar("auditing");
    let total = AtomicU64::new(0);
    let inspectors = InspectorsWith(CheckpointOptions {
        scan_values: settings.scan_values,
    });
    let mut copied = None;
    let result = match &settings.target {
        Target::Remote(remote) => {
            let run = super::remote::RemoteRun {
                tree: shardsmith_store::ObjectTree::new(remote.clone()),
                scratch: &settings.scratch,
                inspectors: &inspectors,
                copied: AtomicU64::new(0),
                copies: AtomicU64::new(0),
            };
            let result = audit_listed(&run.tree, &run, &|n| bar.set_total(n), &|n| bar.inc(n));
            copied = Some((
                run.copies.load(Ordering::Relaxed),
                run.copied.load(Ordering::Relaxed),
            ));
            result
        }
        _ => audit_run(
            &settings.run_dir,
            &inspectors,
            &|n| bar.set_total(total.fetch_add(n, Ordering::Relaxed) + n),
            &|n| bar.inc(n),
        ),
    };
    bar.finish_and_clear();
    let report = result?;
    if report.checkpoints.is_empty() {
        return Err(crate::output::fail(
            ErrorKind::NotFound,
            settings.run_dir.display(),
            format!(
                "no checkpoint found in `{}` (expected subdirectories such as global_step10/, iter_0000010/, checkpoint-500/, or files such as *.pt, *.safetensors)",
                settings.run_dir.display()
            ),
        ));
    }
    Ok(Audited::Run(RunAudit {
        run_dir: settings.run_dir.clone(),
        report,
        copied,
        scratch: settings.scratch.clone(),
        elapsed: started.elapsed(),
    }))
}

impl RunAudit {
    /// Clean (exit 0) when the newest checkpoint is intact and every pointer is right.
    pub fn status(&self) -> Status {
        if self.report.ok() {
            Status::Clean
        } else {
            Status::Problems
        }
    }

    /// What a resume should load: the newest intact checkpoint's path.
    pub fn resume_from(&self) -> Option<PathBuf> {
        self.report
            .newest_intact
            .as_ref()
            .map(|n| self.run_dir.join(n))
    }

    /// The `--json` report.
    pub fn report(&self) -> crate::report::Audit<'_> {
        let report = &self.report;
        crate::report::Audit {
            bytes_checked: report.checkpoints.iter().map(|c| c.bytes_checked).sum(),
            checkpoints: &report.checkpoints,
            command: "audit",
            findings: &report.findings,
            newest: report.newest.as_deref(),
            newest_intact: report.newest_intact.as_deref(),
            ok: self.status() == Status::Clean,
            resume_from: self.resume_from().map(|p| p.display().to_string()),
            run_dir: self.run_dir.display().to_string(),
            seconds: self.elapsed.as_secs_f64(),
            version: crate::report::VERSION,
        }
    }
}
