//! Signed manifests for shardsmith: OpenSSF Model Signing signatures over a dataset or
//! checkpoint directory, compatible both ways with the `model_signing` package.
//!
//! What it owns: the key-pair method of model_signing v1.x. A signature is a Sigstore
//! bundle v0.3 ([`bundle`]) whose DSSE envelope carries an in-toto statement
//! ([`statement`]) that lists the SHA-256 of every file ([`files`] says which files) and
//! is signed with ECDSA on P-256, P-384 or P-521 ([`keys`]). [`sign`] makes one from
//! digests a verification read already produced; [`check`] compares one with the files.
//!
//! What it must not know: shard, token or checkpoint formats (the caller's verification
//! pass reads every file once, through the format inspectors, and hands over the
//! digests), the command line, printing, and any network service. Keyless (Sigstore)
//! signing would add a signer that gets a Fulcio certificate for an OIDC identity and a
//! Rekor entry, and fills the same bundle's certificate and `tlogEntries`; the statement,
//! the file set and the digests here stay as they are.

pub mod bundle;
mod error;
pub mod files;
pub mod keys;
pub mod statement;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use shardsmith_manifest::{Finding, FindingKind, hex};

pub use self::bundle::{Bundle, BundleError};
pub use self::error::{Error, Result};
pub use self::keys::{Curve, KeyError, PrivateKey, PublicKey};
pub use self::statement::{Resource, Statement, StatementError};

/// A signature made by [`sign`].
#[derive(Clone, Debug)]
pub struct Signed {
    /// The bundle file's bytes.
    pub bundle: Vec<u8>,
    /// What it signs.
    pub statement: Statement,
}

/// The subject name model_signing records: the last component of `path`, or of its
/// absolute form when that is empty (`.`).
pub fn subject_name(path: &Path) -> String {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
    };
    name(path)
        .or_else(|| std::fs::canonicalize(path).ok().as_deref().and_then(name))
        .unwrap_or_else(|| ".".into())
}

/// Signs the files of `path` (a directory or one file) with `key`. `known` holds the
/// digests of files already read (by relative name); the others are read here. The
/// signature file is left out when it lies inside `path`.
pub fn sign(
    path: &Path,
    signature: &Path,
    key: &PrivateKey,
    allow_symlinks: bool,
    known: &BTreeMap<String, [u8; 32]>,
) -> Result<Signed> {
    let ignore: Vec<String> = files::inside(path, signature).into_iter().collect();
    let set = files::collect(path, &ignore, allow_symlinks)?;
    let resources = files::digests(&set, known)?;
    let statement = Statement::new(
        &subject_name(path),
        resources,
        allow_symlinks,
        set.ignore_paths,
    );
    let payload = statement.to_json();
    let signature = key.sign(&bundle::pae(&payload));
    Ok(Signed {
        bundle: Bundle::to_json(&key.public_key().hint(), &payload, &signature),
        statement,
    })
}

/// Writes a bundle under a temporary name, syncs it and renames it into place.
pub fn write_bundle(path: &Path, bytes: &[u8]) -> Result<()> {
    shardsmith_manifest::scan::write_atomic(path, bytes)
        .map_err(|e| Error::io("writing signature", path, e))
}

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
/// digest (from `known` where the caller already read the file, else read here), files
/// added and files missing.
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
    let invalid = |report: &mut SignatureReport, message: String| {
        report.findings.push(Finding::error(
            FindingKind::SignatureInvalid,
            shown,
            message,
        ));
    };
    let bundle = match Bundle::parse(&bytes) {
        Ok(b) => b,
        Err(reason) => {
            invalid(&mut report, format!("is not a usable signature: {reason}"));
            return Ok(report);
        }
    };
    match &bundle.hint {
        Some(hint) if *hint != report.key_hint => {
            let given = report.key_hint.clone();
            invalid(
                &mut report,
                format!(
                    "was made with another key: it names key {hint}, the given public key is {given}"
                ),
            );
            return Ok(report);
        }
        Some(_) => {}
        None => report.notes.push(format!(
            "`{shown}` does not name its key (an older bundle format); its signature was checked with the given key"
        )),
    }
    if !key.verify(&bundle::pae(&bundle.payload), &bundle.signature) {
        invalid(
            &mut report,
            "its signature does not match its content: the bundle was altered after signing, or made with another key".into(),
        );
        return Ok(report);
    }
    if bundle.payload_type != bundle::PAYLOAD_TYPE {
        invalid(
            &mut report,
            format!(
                "its payload type is `{}`, not `{}`",
                bundle.payload_type,
                bundle::PAYLOAD_TYPE
            ),
        );
        return Ok(report);
    }
    let statement = match Statement::parse(&bundle.payload) {
        Ok(s) => s,
        Err(reason) => {
            invalid(&mut report, reason.to_string());
            return Ok(report);
        }
    };
    report.valid = true;
    report.files = statement.resources.len();
    let mut ignore = statement.ignore_paths.clone();
    ignore.extend(files::inside(path, signature));
    let set = files::collect(path, &ignore, true)?;
    let local: BTreeMap<String, [u8; 32]> = files::digests(&set, known)?
        .into_iter()
        .map(|r| (r.name, r.digest))
        .collect();
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
    Ok(report)
}

#[cfg(test)]
mod tests;
