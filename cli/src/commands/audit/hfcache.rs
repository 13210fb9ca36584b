//! `audit` of a Hugging Face hub cache (`~/.cache/huggingface/hub`, or one
//! `models--org--name` directory): the checks are `shardsmith_checkpoint::hfcache`'s;
//! this runs them (the summary is in [`super::text`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use shardsmith_checkpoint::hfcache::CacheReport;

use crate::commands::Status;
use crate::commands::verify::not_a_cache;
use crate::progress::Progress;
use crate::report;

/// What the audit of a Hugging Face cache found.
#[derive(Debug)]
pub struct CacheAudit {
    /// The cache as given.
    pub path: PathBuf,
    /// Every repository and snapshot.
    pub report: CacheReport,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

/// Checks every blob, snapshot link and ref of the cache at `path`.
pub fn run(path: &Path, progress: &dyn Progress) -> Result<CacheAudit> {
    let started = Instant::now();
    let bar = progress.bytes_bar("auditing");
    let report =
        shardsmith_checkpoint::hfcache::verify_cache(path, &|total| bar.set_total(total), &|n| {
            bar.inc(n)
        });
    bar.finish_and_clear();
    Ok(CacheAudit {
        path: path.to_path_buf(),
        report: report.ok_or_else(|| not_a_cache(path))?,
        elapsed: started.elapsed(),
    })
}

impl CacheAudit {
    /// Clean (exit 0) when every snapshot a ref names is present and intact.
    pub fn status(&self) -> Status {
        if self.report.referenced_intact() {
            Status::Clean
        } else {
            Status::Problems
        }
    }

    /// The `--json` report.
    pub fn report(&self) -> report::HfCacheAudit<'_> {
        report::HfCacheAudit {
            bytes_checked: self.report.bytes_checked,
            command: "audit",
            findings: self.report.findings(),
            ok: self.status() == Status::Clean,
            path: self.path.display().to_string(),
            repos: &self.report.repos,
            seconds: self.elapsed.as_secs_f64(),
            version: report::VERSION,
        }
    }
}
