//! `verify`'s run and its outcome.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use shardsmith_checkpoint::hfcache::CacheReport;
use shardsmith_inspect::{CheckpointOptions, InspectorsWith};
use shardsmith_manifest::verify::{
    VerifyOptions, VerifyReport, verify_listed, verify_path, verify_ranges,
};
use shardsmith_signing::SignatureReport;

use super::settings::{Settings, Target};
use crate::commands::Status;
use crate::commands::sign::SignatureCheck;
use crate::output::fail;
use crate::progress::Progress;
use crate::report;
use shardsmith_manifest::ErrorKind;

/// What a verification found.
#[derive(Debug)]
pub struct Verified {
    /// The path or URL as given.
    pub path: PathBuf,
    /// Every finding and count.
    pub report: VerifyReport,
    /// With a signature to check: what its check found.
    pub signature: Option<SignatureReport>,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// For a Hugging Face cache, what its check counted.
    pub cache: Option<CacheReport>,
}

/// Verifies what `settings` name, showing progress on `progress`.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Verified> {
    let started = Instant::now();
    if let Target::HfCache = settings.target {
        let bar = progress.bytes_bar("verifying");
        let cache = shardsmith_checkpoint::hfcache::verify_cache(
            &settings.path,
            &|total| bar.set_total(total),
            &|n| bar.inc(n),
        );
        bar.finish_and_clear();
        let cache = cache.ok_or_else(|| not_a_cache(&settings.path))?;
        return Ok(Verified {
            path: settings.path.clone(),
            report: cache.verify_report(settings.allow_empty),
            signature: None,
            elapsed: started.elapsed(),
            cache: Some(cache),
        });
    }
    let inspectors = InspectorsWith(CheckpointOptions {
        scan_values: settings.scan_values,
    });
    // The key and the bundle are read before the data: a bad key fails at once.
    let signature = match &settings.signature {
        Some((bundle, key)) => Some(SignatureCheck::new(bundle, key)?),
        None => None,
    };
    let options = VerifyOptions {
        manifest: settings.manifest.clone(),
        expect_root: settings.expect_root.clone(),
        inspectors: &inspectors,
        allow_empty: settings.allow_empty,
        collect_digests: false,
        digest_check: signature
            .as_ref()
            .map(|s| s as &dyn shardsmith_manifest::verify::DigestCheck),
    };
    let bar = progress.bytes_bar("verifying");
    let result = match &settings.target {
        Target::Remote(remote) => {
            let tree = shardsmith_store::ObjectTree::new(remote.clone());
            verify_listed(
                &tree,
                &options,
                remote.io_concurrency().min(32),
                &|total| bar.set_total(total),
                &|n| bar.inc(n),
            )
        }
        _ if !settings.ranges.is_empty() => verify_ranges(
            &settings.path,
            &settings.ranges,
            &options,
            &|total| bar.set_total(total),
            &|n| bar.inc(n),
        ),
        _ => verify_path(
            &settings.path,
            &options,
            &|total| bar.set_total(total),
            &|n| bar.inc(n),
        ),
    };
    bar.finish_and_clear();
    let report = result?;
    Ok(Verified {
        path: settings.path.clone(),
        report,
        signature: signature.and_then(SignatureCheck::into_report),
        elapsed: started.elapsed(),
        cache: None,
    })
}

/// A path that looked like a Hugging Face cache when resolved and no longer does.
pub(crate) fn not_a_cache(path: &std::path::Path) -> anyhow::Error {
    fail(
        ErrorKind::BadInput,
        path.display(),
        format!("`{}` is not a Hugging Face cache", path.display()),
    )
}

impl Verified {
    /// Clean (exit 0) without an error-severity finding, else problems (exit 1).
    pub fn status(&self) -> Status {
        if self.report.errors() > 0 {
            Status::Problems
        } else {
            Status::Clean
        }
    }

    /// The `--json` report.
    pub fn report(&self) -> report::Verify<'_> {
        let report = &self.report;
        report::Verify {
            bytes_checked: report.bytes_checked,
            checked: &report.checked,
            command: "verify",
            documents: report.documents,
            errors: report.errors(),
            files_checked: report.files_checked,
            findings: &report.findings,
            manifest: report.manifest.as_deref(),
            notes: &report.notes,
            ok: self.status() == Status::Clean,
            partial: report.partial.as_deref(),
            path: self.path.display().to_string(),
            root_sha256: report.root_sha256.as_deref(),
            samples: report.samples,
            seconds: self.elapsed.as_secs_f64(),
            signature: self.signature.as_ref(),
            tokens: report.tokens,
            version: report::VERSION,
            warnings: report.warnings(),
        }
    }
}
