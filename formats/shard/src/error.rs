use std::path::PathBuf;

use shardsmith_manifest::{Classify, ErrorKind};

/// Errors of configuring a format and of reading samples from a source.
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
    /// A format option is invalid, or does not apply to the chosen format.
    #[error("{0}")]
    Setting(String),
    /// An input cannot be used as the source claims (a file that is not readable
    /// Parquet, a schema that differs from the first file's, a column that cannot be a
    /// field name).
    #[error("input `{path}` {reason}")]
    BadInput {
        /// The input file or directory.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The input holds nothing to read.
    #[error("no samples to pack in `{root}`{detail}")]
    EmptyInput {
        /// The input root.
        root: String,
        /// Why.
        detail: String,
    },
    /// Two samples of the input have one key: readers would merge or confuse them.
    #[error("input key `{key}` is used twice, by `{first}` and by `{second}`: {hint}")]
    KeyCollision {
        /// The key.
        key: String,
        /// Where the first sample comes from.
        first: String,
        /// Where the second comes from.
        second: String,
        /// How to tell them apart.
        hint: String,
    },
    /// An input changed size between listing and reading.
    #[error(
        "input `{path}` changed while packing (listed with {listed} bytes, read {read}); re-run to pack its current content"
    )]
    InputChanged {
        /// The input.
        path: String,
        /// Size when listed.
        listed: u64,
        /// Size when read (a lower bound when it grew).
        read: u64,
    },
    /// An input was listed but is gone when its sample is read.
    #[error(
        "input `{path}` disappeared while packing (listed with {listed} bytes); re-run to pack the input as it is now"
    )]
    InputVanished {
        /// The input.
        path: String,
        /// Size when listed.
        listed: u64,
    },
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
            Error::Setting(_) => ErrorKind::Setting,
            Error::BadInput { .. } => ErrorKind::BadInput,
            Error::EmptyInput { .. } => ErrorKind::EmptyInput,
            Error::KeyCollision { .. } => ErrorKind::KeyCollision,
            Error::InputChanged { .. } => ErrorKind::InputChanged,
            Error::InputVanished { .. } => ErrorKind::InputVanished,
            Error::Store(e) => e.kind(),
            Error::Manifest(e) => e.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. } => Some(path.display().to_string()),
            Error::Setting(_) => None,
            Error::BadInput { path, .. }
            | Error::InputChanged { path, .. }
            | Error::InputVanished { path, .. } => Some(path.clone()),
            Error::EmptyInput { root, .. } => Some(root.clone()),
            Error::KeyCollision { second, .. } => Some(second.clone()),
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
