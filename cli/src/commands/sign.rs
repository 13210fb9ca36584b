//! `shardsmith sign PATH --private-key KEY`: an OpenSSF Model Signing bundle over every
//! file, from the same single read that verifies them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use shardsmith_inspect::{CheckpointOptions, InspectorsWith};
use shardsmith_manifest::verify::{DigestCheck, DigestCheckOutcome, VerifyOptions, verify_path};
use shardsmith_manifest::{Finding, FindingKind};
use shardsmith_signing::{PrivateKey, PublicKey, SignatureReport};

use super::Status;
use crate::args::SignArgs;
use crate::output::{Printer, seconds};
use crate::progress::Progress as _;
use crate::report;
use crate::size::human_bytes;
use shardsmith_manifest::ErrorKind;

fn read_key(path: &Path) -> Result<String> {
    crate::output::need_path(path, "key")?;
    std::fs::read_to_string(path)
        .with_context(|| format!("key `{}` cannot be read", path.display()))
}

fn key_error(path: &Path, reason: impl std::fmt::Display) -> anyhow::Error {
    crate::output::CliError {
        kind: ErrorKind::Key,
        path: Some(path.display().to_string()),
        message: format!("key `{}` {reason}", path.display()),
    }
    .into()
}

/// A public key file, or an error that says what it holds instead.
pub fn load_public(path: &Path) -> Result<PublicKey> {
    PublicKey::from_pem(&read_key(path)?).map_err(|reason| key_error(path, reason))
}

fn load_private(path: &Path) -> Result<PrivateKey> {
    PrivateKey::from_pem(&read_key(path)?).map_err(|reason| key_error(path, reason))
}

/// `verify --signature`: the bundle checked against the files' digests from the same
/// read as every other check.
pub struct SignatureCheck {
    path: std::path::PathBuf,
    key: PublicKey,
    report: std::sync::Mutex<Option<SignatureReport>>,
}

impl SignatureCheck {
    /// Reads the key, and makes sure the bundle can be read, before any data is.
    pub fn new(bundle: &Path, key: &Path) -> Result<Self> {
        let key = load_public(key)?;
        std::fs::File::open(bundle)
            .with_context(|| format!("signature `{}` cannot be read", bundle.display()))?;
        Ok(Self {
            path: bundle.to_path_buf(),
            key,
            report: std::sync::Mutex::new(None),
        })
    }

    /// What the check found, once verification ran.
    pub fn into_report(self) -> Option<SignatureReport> {
        self.report
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl DigestCheck for SignatureCheck {
    fn check(&self, root: &Path, digests: &BTreeMap<String, [u8; 32]>) -> DigestCheckOutcome {
        let shown = self.path.display().to_string();
        let report = shardsmith_signing::check(root, &self.path, &shown, &self.key, digests)
            .unwrap_or_else(|e| SignatureReport {
                curve: self.key.curve().name().into(),
                key_hint: self.key.hint(),
                findings: vec![Finding::error(
                    FindingKind::UnreadableFile,
                    shown.as_str(),
                    format!("the signature could not be checked: {e}"),
                )],
                ..SignatureReport::default()
            });
        let outcome = DigestCheckOutcome {
            findings: report.findings.clone(),
            notes: report.notes.clone(),
            covered: report.covered.iter().cloned().collect(),
        };
        *self
            .report
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(report);
        outcome
    }
}

/// The summary line of a signature check.
pub fn signature_line(sig: &SignatureReport) -> String {
    let key = format!("{} key {}", sig.curve, &sig.key_hint[..16]);
    if sig.valid {
        format!(
            "  signature  valid, by the {key}...; it covers {} file(s)\n",
            sig.files
        )
    } else {
        format!("  signature  NOT valid for the {key}...\n")
    }
}

pub fn run(args: &SignArgs, printer: &Printer) -> Result<Status> {
    crate::output::need_path(&args.path, "path")?;
    let started = Instant::now();
    let key = load_private(&args.private_key)?;
    let mut known = BTreeMap::new();
    let mut bytes = None;
    if !args.no_checks {
        let inspectors = InspectorsWith(CheckpointOptions { scan_values: false });
        let options = VerifyOptions {
            manifest: None,
            expect_root: None,
            inspectors: &inspectors,
            allow_empty: true,
            collect_digests: true,
            digest_check: None,
        };
        let bar = printer.bytes_bar("verifying");
        let result = verify_path(&args.path, &options, &|total| bar.set_total(total), &|n| {
            bar.inc(n)
        });
        bar.finish_and_clear();
        let report = result?;
        if report.errors() > 0 {
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
            printer.summary(&text);
            printer.report(&report::SignRefused {
                command: "sign",
                errors: report.errors(),
                findings: &report.findings,
                path: args.path.display().to_string(),
                signed: false,
                version: report::VERSION,
            });
            return Ok(Status::Problems);
        }
        bytes = Some(report.bytes_checked);
        known = report.digests;
    }
    let signed = shardsmith_signing::sign(
        &args.path,
        &args.signature,
        &key,
        args.allow_symlinks,
        &known,
    )?;
    shardsmith_signing::write_bundle(&args.signature, &signed.bundle)?;
    let elapsed = started.elapsed();
    let public = key.public_key();
    let files = signed.statement.resources.len();
    let mut text = format!(
        "signed {}: {files} file(s){} with the {} key {}... in {}\n",
        args.path.display(),
        bytes.map_or_else(String::new, |b| format!(
            " ({} read and verified)",
            human_bytes(b)
        )),
        public.curve().name(),
        &public.hint()[..16],
        seconds(elapsed),
    );
    text.push_str(&format!("  signature  {}\n", args.signature.display()));
    text.push_str(&format!(
        "  check      shardsmith verify {} --signature {} --public-key KEY.pub\n",
        args.path.display(),
        args.signature.display()
    ));
    printer.summary(&text);
    printer.report(&report::Sign {
        bytes_checked: bytes,
        command: "sign",
        curve: public.curve().name(),
        files,
        key_hint: public.hint(),
        path: args.path.display().to_string(),
        seconds: elapsed.as_secs_f64(),
        signature: args.signature.display().to_string(),
        signed: true,
        subject_sha256: shardsmith_manifest::hex(&signed.statement.root),
        version: report::VERSION,
    });
    Ok(Status::Clean)
}
