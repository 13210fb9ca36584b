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
mod check;
mod error;
pub mod files;
pub mod keys;
pub mod statement;

use std::collections::BTreeMap;
use std::path::Path;

pub use self::bundle::{Bundle, BundleError};
pub use self::check::{SignatureReport, check};
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

#[cfg(test)]
mod tests;
