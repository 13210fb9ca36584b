//! Signed manifests for shardsmith: OpenSSF Model Signing signatures over a dataset or
//! checkpoint directory, compatible both ways with the `model_signing` package.
//!
//! What it owns: the key-pair method of model_signing v1.x. A signature is a Sigstore
//! bundle v0.3 ([`bundle`]) whose DSSE envelope carries an in-toto statement
//! ([`statement`]) that lists the SHA-256 of every file ([`files`] says which files), or
//! of every shard of every file (model_signing's shard serialization, hashed on every
//! core: [`shards`]), and is signed with ECDSA on P-256, P-384 or P-521 ([`keys`]).
//! [`sign`] makes one (per file, from digests a verification read already produced);
//! [`check`] compares one with the files.
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
mod shard_check;
pub mod shards;
pub mod statement;

use std::collections::BTreeMap;
use std::path::Path;

pub use self::bundle::{Bundle, BundleError};
pub use self::check::{SignatureReport, check};
pub use self::error::{Error, Result};
pub use self::keys::{Curve, KeyError, PrivateKey, PublicKey};
pub use self::statement::{Method, Resource, Span, Statement, StatementError};

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

/// How [`sign`] signs.
pub struct SignOptions<'a> {
    /// Sign symlinks to files as their targets' content (else they are refused).
    pub allow_symlinks: bool,
    /// One digest per file, or per shard of each file.
    pub method: Method,
    /// With method `files`: the digests of files already read (by relative name); the
    /// others are read here. Shards are always read here.
    pub known: &'a BTreeMap<String, [u8; 32]>,
    /// Called once with the bytes that will be read, before any is.
    pub progress_total: &'a dyn Fn(u64),
    /// Called with each count of bytes read.
    pub progress: &'a (dyn Fn(u64) + Sync),
}

/// Signs the files of `path` (a directory or one file) with `key`. The signature file
/// is left out when it lies inside `path`.
pub fn sign(
    path: &Path,
    signature: &Path,
    key: &PrivateKey,
    options: &SignOptions<'_>,
) -> Result<Signed> {
    let ignore: Vec<String> = files::inside(path, signature).into_iter().collect();
    let set = files::collect(path, &ignore, options.allow_symlinks)?;
    let resources = match options.method {
        Method::Files => {
            let unread: u64 = set
                .files
                .iter()
                .filter(|(name, _)| !options.known.contains_key(name))
                .filter_map(|(_, full)| std::fs::metadata(full).ok())
                .map(|m| m.len())
                .sum();
            (options.progress_total)(unread);
            files::digests(&set, options.known, options.progress)?
        }
        Method::Shards { shard_size } => {
            shards::digests(&set, shard_size, options.progress_total, options.progress)?
        }
    };
    let statement = Statement::new(
        &subject_name(path),
        options.method,
        resources,
        options.allow_symlinks,
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
