//! `sign`'s settings, run and outcome.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use shardsmith_inspect::{CheckpointOptions, InspectorsWith};
use shardsmith_manifest::verify::{VerifyOptions, VerifyReport, verify_path};
use shardsmith_signing::{Method, PublicKey, SignOptions, Signed as Bundle};

use super::check::load_private;
use crate::args::SignArgs;
use crate::commands::Status;
use crate::output::seconds;
use crate::progress::Progress;
use crate::report;
use crate::size::human_bytes;

/// What `sign` signs with which key, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    path: PathBuf,
    private_key: PathBuf,
    signature: PathBuf,
    allow_symlinks: bool,
    checks: bool,
    method: Method,
}

impl Settings {
    /// PATH must exist.
    pub fn resolve(args: &SignArgs) -> Result<Self> {
        crate::output::need_path(&args.path, "path")?;
        Ok(Self {
            path: args.path.clone(),
            private_key: args.private_key.clone(),
            signature: args.signature.clone(),
            allow_symlinks: args.allow_symlinks,
            checks: !args.no_checks,
            method: match args.shard_size {
                Some(shard_size) => Method::Shards { shard_size },
                None => Method::Files,
            },
        })
    }
}

/// What `sign` did.
#[derive(Debug)]
pub enum Signed {
    /// Verification found errors: nothing was signed.
    Refused { path: PathBuf, report: VerifyReport },
    /// The bundle was written.
    Signed {
        path: PathBuf,
        signature: PathBuf,
        signed: Box<Bundle>,
        key: PublicKey,
        /// Bytes read and verified first (none with `--no-checks`).
        bytes: Option<u64>,
        elapsed: Duration,
    },
}

/// Reads the key (before any data), verifies the files unless told not to, and signs
/// them: one digest per file from that same read, or one per shard read anew on every
/// core.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Signed> {
    let started = Instant::now();
    let key = load_private(&settings.private_key)?;
    let mut known = BTreeMap::new();
    let mut bytes = None;
    if settings.checks {
        let report = verify(settings, progress)?;
        if report.errors() > 0 {
            return Ok(Signed::Refused {
                path: settings.path.clone(),
                report,
            });
        }
        bytes = Some(report.bytes_checked);
        known = report.digests;
    }
    let bar = progress.bytes_bar("signing");
    let signed = shardsmith_signing::sign(
        &settings.path,
        &settings.signature,
        &key,
        &SignOptions {
            allow_symlinks: settings.allow_symlinks,
            method: settings.method,
            known: &known,
            progress_total: &|total| bar.set_total(total),
            progress: &|n| bar.inc(n),
        },
    );
    bar.finish_and_clear();
    let signed = signed?;
    shardsmith_signing::write_bundle(&settings.signature, &signed.bundle)?;
    Ok(Signed::Signed {
        path: settings.path.clone(),
        signature: settings.signature.clone(),
        signed: Box::new(signed),
        key: key.public_key(),
        bytes,
        elapsed: started.elapsed(),
    })
}

/// Every check `verify` makes, keeping each file's digest for a statement of one digest
/// per file.
fn verify(settings: &Settings, progress: &dyn Progress) -> Result<VerifyReport> {
    let inspectors = InspectorsWith(CheckpointOptions { scan_values: false });
    let options = VerifyOptions {
        manifest: None,
        expect_root: None,
        inspectors: &inspectors,
        allow_empty: true,
        collect_digests: settings.method == Method::Files,
        digest_check: None,
    };
    let bar = progress.bytes_bar("verifying");
    let result = verify_path(
        &settings.path,
        &options,
        &|total| bar.set_total(total),
        &|n| bar.inc(n),
    );
    bar.finish_and_clear();
    Ok(result?)
}

impl Signed {
    /// Clean when signed; problems when verification refused it.
    pub fn status(&self) -> Status {
        match self {
            Signed::Refused { .. } => Status::Problems,
            Signed::Signed { .. } => Status::Clean,
        }
    }

    /// The human summary.
    pub fn text(&self) -> String {
        match self {
            Signed::Refused { report, .. } => {
                let mut text = String::new();
                for finding in &report.findings {
                    let tag = if finding.is_error() {
                        "error"
                    } else {
                        "warning"
                    };
                    text.push_str(&format!("{tag}: {finding}\n"));
                }
                let refusal = shardsmith_signing::Error::Unverified {
                    errors: report.errors(),
                };
                text.push_str(&format!("FAILED: {refusal}\n"));
                text
            }
            Signed::Signed {
                path,
                signature,
                signed,
                key,
                bytes,
                elapsed,
            } => {
                let statement = &signed.statement;
                let files = statement.files();
                let shards = match statement.method.shard_size() {
                    Some(size) => {
                        format!(" in {} shard(s) of {size} bytes", statement.resources.len())
                    }
                    None => String::new(),
                };
                let mut text = format!(
                    "signed {}: {files} file(s){shards}{} with the {} key {}... in {}\n",
                    path.display(),
                    bytes.map_or_else(String::new, |b| format!(
                        " ({} read and verified)",
                        human_bytes(b)
                    )),
                    key.curve().name(),
                    &key.hint()[..16],
                    seconds(*elapsed),
                );
                text.push_str(&format!("  signature  {}\n", signature.display()));
                text.push_str(&format!(
                    "  check      shardsmith verify {} --signature {} --public-key KEY.pub\n",
                    path.display(),
                    signature.display()
                ));
                text
            }
        }
    }

    /// The `--json` report of a refusal (`None` when signed).
    pub fn refused_report(&self) -> Option<report::SignRefused<'_>> {
        let Signed::Refused { path, report } = self else {
            return None;
        };
        Some(report::SignRefused {
            command: "sign",
            errors: report.errors(),
            findings: &report.findings,
            path: path.display().to_string(),
            signed: false,
            version: report::VERSION,
        })
    }

    /// The `--json` report of a signature written (`None` when refused).
    pub fn signed_report(&self) -> Option<report::Sign> {
        let Signed::Signed {
            path,
            signature,
            signed,
            key,
            bytes,
            elapsed,
        } = self
        else {
            return None;
        };
        Some(report::Sign {
            bytes_checked: *bytes,
            command: "sign",
            curve: key.curve().name(),
            files: signed.statement.files(),
            key_hint: key.hint(),
            path: path.display().to_string(),
            seconds: elapsed.as_secs_f64(),
            shard_size: signed.statement.method.shard_size(),
            shards: signed
                .statement
                .method
                .shard_size()
                .map(|_| signed.statement.resources.len()),
            signature: signature.display().to_string(),
            signed: true,
            subject_sha256: shardsmith_manifest::hex(&signed.statement.root),
            version: report::VERSION,
        })
    }
}
