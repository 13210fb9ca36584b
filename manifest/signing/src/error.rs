use std::path::PathBuf;

use shardsmith_manifest::{Classify, ErrorKind};

/// Errors that stop signing or a signature check. A signature that does not match is
/// not an error but findings ([`crate::SignatureReport`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{op} `{path}`: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A key file that cannot be used.
    #[error("key `{path}` {reason}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// What it holds instead.
        reason: String,
    },
    /// A symlink where model_signing refuses them.
    #[error(
        "`{path}` is a symlink; model_signing signs symlinks only when asked (--allow-symlinks signs the target's content under the link's name)"
    )]
    Symlink {
        /// The link, relative to the signed directory.
        path: String,
    },
    /// An entry that is not a regular file, a directory or an allowed symlink.
    #[error("`{path}` cannot be signed: {reason}")]
    NotAFile {
        /// The entry, relative to the signed directory.
        path: String,
        /// Why.
        reason: String,
    },
    /// A shard size so small for the files that the statement would list too many
    /// shards.
    #[error(
        "with --shard-size {shard_size} the signature would list more than {max} shards of {shard_size} byte(s); give a larger shard size (model_signing's default is 1GB)"
    )]
    TooManyShards {
        /// The shard size asked for.
        shard_size: u64,
        /// The most shards a signature may list.
        max: u64,
    },
    /// The data did not verify, so it is not signed.
    #[error(
        "not signed: verification found {errors} problem(s); fix them, or sign the files as they are with --no-checks"
    )]
    Unverified {
        /// Error-severity findings.
        errors: usize,
    },
    /// Walking or verifying the directory failed.
    #[error(transparent)]
    Manifest(#[from] shardsmith_manifest::Error),
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::Key { .. } => ErrorKind::Key,
            Error::Symlink { .. } => ErrorKind::Symlink,
            Error::NotAFile { .. } => ErrorKind::NotAFile,
            Error::TooManyShards { .. } => ErrorKind::Setting,
            Error::Unverified { .. } => ErrorKind::Unverified,
            Error::Manifest(e) => e.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. } | Error::Key { path, .. } => Some(path.display().to_string()),
            Error::Symlink { path } | Error::NotAFile { path, .. } => Some(path.clone()),
            Error::Unverified { .. } | Error::TooManyShards { .. } => None,
            Error::Manifest(e) => e.path(),
        }
    }
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
