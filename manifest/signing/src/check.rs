//! Checking a signature: the bundle against the public key, then the statement's
//! digests against the files: one per file, or one per shard ([`crate::shard_check`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use shardsmith_manifest::{Finding, FindingKind, hex};

use crate::statement::Method;
use crate::{Bundle, Error, PublicKey, Result, Statement, bundle, files, shard_check};

/// What a signature check found.
#[derive(Clone, Debug, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SignatureReport {
    /// The bundle's own signature verified with the given key.
    pub valid: bool,
    /// The curve of the given key.
    pub curve: String,
    /// The given key's hint (SHA-256 of its PEM).
    pub key_hint: String,
    /// Files the signature covers.
    pub files: usize,
    /// The shard size in bytes of a signature made with model_signing's shard
    /// serialization (one digest per shard); null for one digest per file.
    pub shard_size: Option<u64>,
    /// The shards such a signature lists (null for one digest per file).
    pub shards: Option<usize>,
    /// Files present whose digest was compared with the signature's.
    #[serde(skip)]
    pub covered: Vec<String>,
    /// Problems: a bundle that does not verify, files added, missing or changed.
    pub findings: Vec<Finding>,
    /// Remarks (an older bundle without a key hint).
    pub notes: Vec<String>,
}

/// Checks the bundle `signature` (shown as `shown` in findings) against `key` and the
/// files of `path`: the bundle's signature and consistency first, then every file's
/// digest (from `known` where the caller already read the file, else read here) or,
/// for a shards signature, every shard's (read here, in parallel), files added and
/// files missing.
pub fn check(
    path: &Path,
    signature: &Path,
    shown: &str,
    key: &PublicKey,
    known: &BTreeMap<String, [u8; 32]>,
) -> Result<SignatureReport> {
    let bytes =
        std::fs::read(signature).map_err(|e| Error::io("reading signature", signature, e))?;
    let mut report = SignatureReport {
        curve: key.curve().name().into(),
        key_hint: key.hint(),
        ..SignatureReport::default()
    };
    let Some(statement) = verified_statement(&bytes, key, shown, &mut report) else {
        return Ok(report);
    };
    report.valid = true;
    report.files = statement.files();
    let mut ignore = statement.ignore_paths.clone();
    ignore.extend(files::inside(path, signature));
    let set = files::collect(path, &ignore, true)?;
    match statement.method {
        Method::Files => {
            let local: BTreeMap<String, [u8; 32]> = files::digests(&set, known, &|_| {})?
                .into_iter()
                .map(|r| (r.name, r.digest))
                .collect();
            compare_files(&statement, &local, shown, &mut report);
        }
        Method::Shards { shard_size } => {
            report.shard_size = Some(shard_size);
            report.shards = Some(statement.resources.len());
            let compared = shard_check::compare(&statement, shard_size, &set, shown)?;
            report.findings.extend(compared.findings);
            report.covered.extend(compared.covered);
        }
    }
    Ok(report)
}

/// The statement of the bundle `bytes` when the bundle is one, names `key` (or no key),
/// its signature verifies with it, and it carries a statement shardsmith checks;
/// otherwise `None`, with the finding (or the note on a bundle that names no key) in
/// `report`.
fn verified_statement(
    bytes: &[u8],
    key: &PublicKey,
    shown: &str,
    report: &mut SignatureReport,
) -> Option<Statement> {
    let invalid = |report: &mut SignatureReport, message: String| {
        report.findings.push(Finding::error(
            FindingKind::SignatureInvalid,
            shown,
            message,
        ));
    };
    let bundle = match Bundle::parse(bytes) {
        Ok(b) => b,
        Err(reason) => {
            invalid(report, format!("is not a usable signature: {reason}"));
            return None;
        }
    };
    match &bundle.hint {
        Some(hint) if *hint != report.key_hint => {
            let given = report.key_hint.clone();
            invalid(
                report,
                format!(
                    "was made with another key: it names key {hint}, the given public key is {given}"
                ),
            );
            return None;
        }
        Some(_) => {}
        None => report.notes.push(format!(
            "`{shown}` does not name its key (an older bundle format); its signature was checked with the given key"
        )),
    }
    if !key.verify(&bundle::pae(&bundle.payload), &bundle.signature) {
        invalid(
            report,
            "its signature does not match its content: the bundle was altered after signing, or made with another key".into(),
        );
        return None;
    }
    if bundle.payload_type != bundle::PAYLOAD_TYPE {
        invalid(
            report,
            format!(
                "its payload type is `{}`, not `{}`",
                bundle.payload_type,
                bundle::PAYLOAD_TYPE
            ),
        );
        return None;
    }
    match Statement::parse(&bundle.payload) {
        Ok(s) => Some(s),
        Err(reason) => {
            invalid(report, reason.to_string());
            None
        }
    }
}

/// Each file the statement covers compared with the one present: missing, changed, and
/// (the other way) present but not covered.
fn compare_files(
    statement: &Statement,
    local: &BTreeMap<String, [u8; 32]>,
    shown: &str,
    report: &mut SignatureReport,
) {
    let signed: BTreeMap<&str, &[u8; 32]> = statement
        .resources
        .iter()
        .map(|r| (r.name.as_str(), &r.digest))
        .collect();
    for (name, digest) in &signed {
        if local.contains_key(*name) {
            report.covered.push((*name).to_string());
        }
        match local.get(*name) {
            None => report.findings.push(Finding::error(
                FindingKind::SignedFileMissing,
                *name,
                format!("covered by the signature `{shown}` but not present"),
            )),
            Some(actual) if actual != *digest => report.findings.push(
                Finding::error(
                    FindingKind::SignedDigestMismatch,
                    *name,
                    format!("SHA-256 differs from the one the signature `{shown}` covers"),
                )
                .values(hex(*digest), hex(actual)),
            ),
            Some(_) => {}
        }
    }
    for name in local.keys().filter(|n| !signed.contains_key(n.as_str())) {
        report.findings.push(Finding::error(
            FindingKind::UnsignedFile,
            name,
            format!("present but not covered by the signature `{shown}` (added after signing)"),
        ));
    }
}
