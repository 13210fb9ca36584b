//! The manifest crate's errors, and the vocabulary of error kinds every shardsmith
//! library shares ([`ErrorKind`], [`Classify`]).

use std::path::PathBuf;

mod kind;

pub use kind::{Classify, ErrorKind};

/// Errors that stop a manifest operation. Problems found *in* the data are
/// [`Finding`](crate::Finding)s, not errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{op} `{path}`: {source}")]
    Io {
        /// What was being done (`reading`, `creating`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A manifest file could not be parsed.
    #[error("manifest `{path}` is not valid: {reason}")]
    BadManifest {
        /// The manifest file.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// A file where a manifest is expected holds JSON of another tool.
    #[error("`{path}` is not a shardsmith manifest: {reason}")]
    ForeignManifest {
        /// The file.
        path: PathBuf,
        /// What it holds instead.
        reason: String,
    },
    /// The place a dataset is read from failed with its own error (an object store
    /// request, after its retries): its message, whole, and its kind.
    #[error("{message}")]
    Source {
        /// The kind the source gives it (`storage`, `location`).
        kind: ErrorKind,
        /// The dataset's location.
        location: String,
        /// The source's message.
        message: String,
    },
    /// The location holds nothing at all: a bucket or prefix that does not exist.
    #[error("`{location}` holds no files: {advice}")]
    Empty {
        /// The dataset's location.
        location: String,
        /// What to check.
        advice: String,
    },
    /// A byte range of a file that cannot be checked by its chunk digests (a file the
    /// manifest does not list, a range outside it, a file without a usable chunk list).
    #[error("cannot check bytes {start}..{end} of `{path}`: {reason}")]
    Range {
        /// The file, relative to the dataset, as given.
        path: String,
        /// The range asked for.
        start: u64,
        /// Its end (exclusive).
        end: u64,
        /// Why it cannot be checked, and what to do instead.
        reason: String,
    },
    /// A file name cannot be represented in a manifest.
    #[error("file name `{path}` is not valid UTF-8; rename it or leave it out of the directory")]
    NonUtf8Name {
        /// The offending path (lossy).
        path: PathBuf,
    },
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::BadManifest { .. } => ErrorKind::BadManifest,
            Error::ForeignManifest { .. } => ErrorKind::ForeignManifest,
            Error::NonUtf8Name { .. } => ErrorKind::NonUtf8Name,
            Error::Source { kind, .. } => *kind,
            Error::Empty { .. } => ErrorKind::NotFound,
            Error::Range { .. } => ErrorKind::Setting,
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. }
            | Error::BadManifest { path, .. }
            | Error::ForeignManifest { path, .. }
            | Error::NonUtf8Name { path } => Some(path.display().to_string()),
            Error::Source { location, .. } | Error::Empty { location, .. } => {
                Some(location.clone())
            }
            Error::Range { path, .. } => Some(path.clone()),
        }
    }
}

impl Error {
    /// Shorthand for [`Error::Io`].
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
