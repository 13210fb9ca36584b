//! Keys, and the signature check `verify --signature` runs in the same read as its
//! other checks.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use shardsmith_manifest::ErrorKind;
use shardsmith_manifest::verify::{DigestCheck, DigestCheckOutcome};
use shardsmith_manifest::{Finding, FindingKind};
use shardsmith_signing::{PrivateKey, PublicKey, SignatureReport};

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

pub(super) fn load_private(path: &Path) -> Result<PrivateKey> {
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
    let shards = match (sig.shards, sig.shard_size) {
        (Some(shards), Some(size)) => format!(" in {shards} shard(s) of {size} bytes"),
        _ => String::new(),
    };
    if sig.valid {
        format!(
            "  signature  valid, by the {key}...; it covers {} file(s){shards}\n",
            sig.files
        )
    } else {
        format!("  signature  NOT valid for the {key}...\n")
    }
}
