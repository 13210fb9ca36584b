use std::path::PathBuf;

use shardsmith_manifest::{Classify, ErrorKind};

/// Errors that stop a `pack` (or `merge`) run. Inputs that are merely left out are not
/// errors: they are listed as skipped (unless `--strict` makes them errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation failed.
    #[error("{op} `{path}`: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `--strict` and an input would have been skipped.
    #[error(
        "input `{path}` {reason} (--strict turns every skipped input into an error; {count} input(s) affected)"
    )]
    Strict {
        /// First affected input.
        path: String,
        /// Why it would be skipped.
        reason: String,
        /// How many inputs would be skipped in all.
        count: usize,
    },
    /// A setting is invalid.
    #[error("{0}")]
    Setting(String),
    /// The format could not finish the dataset from its shards (MDS `index.json`).
    #[error("cannot finish the dataset: {0}")]
    Finish(String),
    /// Parts cannot be merged as asked.
    #[error("{0}")]
    Merge(String),
    /// The tasks of a split run cannot be finished: one is missing, was run with other
    /// options, or was run twice at once.
    #[error("{0}")]
    Task(String),
    /// A worker thread panicked: a bug in shardsmith, not in the input.
    #[error("{0} panicked; please report this as a bug")]
    Panicked(&'static str),
    /// A format or sample source failed, or the input holds nothing to pack or changed
    /// while packing.
    #[error(transparent)]
    Shard(#[from] shardsmith_shard::Error),
    /// Reading the input or writing the output failed.
    #[error(transparent)]
    Store(#[from] shardsmith_store::Error),
    /// A manifest operation failed.
    #[error(transparent)]
    Manifest(#[from] shardsmith_manifest::Error),
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::Strict { .. } => ErrorKind::Strict,
            Error::Setting(_) => ErrorKind::Setting,
            Error::Finish(_) => ErrorKind::Finish,
            Error::Merge(_) => ErrorKind::Merge,
            Error::Task(_) => ErrorKind::Task,
            Error::Panicked(_) => ErrorKind::Panicked,
            Error::Shard(e) => e.kind(),
            Error::Store(e) => e.kind(),
            Error::Manifest(e) => e.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. } => Some(path.display().to_string()),
            Error::Strict { path, .. } => Some(path.clone()),
            Error::Setting(_)
            | Error::Finish(_)
            | Error::Merge(_)
            | Error::Task(_)
            | Error::Panicked(_) => None,
            Error::Shard(e) => e.path(),
            Error::Store(e) => e.path(),
            Error::Manifest(e) => e.path(),
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
