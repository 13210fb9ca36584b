use std::path::PathBuf;

use shardsmith_manifest::{Classify, ErrorKind};

/// Errors that stop a `tokenize` run. Malformed records are not errors: they are
/// counted and listed as skipped (unless `--strict` makes them errors).
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
    /// A setting is invalid.
    #[error("{0}")]
    Setting(String),
    /// A tokenizer cannot be loaded or lacks a token it needs.
    #[error("tokenizer `{name}` {reason}")]
    Tokenizer {
        /// Encoding name or tokenizer.json path.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The tokens do not fit the output format (an id outside the vocabulary, a
    /// document longer than Megatron's int32 lengths).
    #[error("{0}")]
    Unrepresentable(String),
    /// Nothing to tokenize.
    #[error("no documents to tokenize in `{root}`{detail}")]
    NoDocuments {
        /// The (first) input.
        root: String,
        /// Why (e.g. how many records were left out).
        detail: String,
    },
    /// An input record is malformed and `--strict` is set (or it cannot be skipped).
    #[error("input `{path}` line {line}: {reason}")]
    BadRecord {
        /// The input file.
        path: String,
        /// 1-based line (JSONL), row (Parquet, also 1-based) or 1 (a text file).
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// An input file as a whole cannot be read (a Parquet footer, a missing column).
    #[error("input `{path}`: {reason}")]
    BadFile {
        /// The input file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The pipeline stopped early because another of its threads failed or ended; the
    /// other thread's error is the cause.
    #[error("stopped: {0}")]
    Stopped(&'static str),
    /// A worker thread panicked: a bug in shardsmith, not in the input.
    #[error("{0} panicked; please report this as a bug")]
    Panicked(&'static str),
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
            Error::Tokenizer { .. } => ErrorKind::Tokenizer,
            Error::Unrepresentable(_) => ErrorKind::Unrepresentable,
            Error::NoDocuments { .. } => ErrorKind::NoDocuments,
            Error::BadRecord { .. } => ErrorKind::BadRecord,
            Error::BadFile { .. } => ErrorKind::BadInput,
            Error::Stopped(_) => ErrorKind::Stopped,
            Error::Panicked(_) => ErrorKind::Panicked,
            Error::Store(e) => e.kind(),
            Error::Manifest(e) => e.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. } => Some(path.display().to_string()),
            Error::BadRecord { path, .. } | Error::BadFile { path, .. } => Some(path.clone()),
            Error::NoDocuments { root, .. } => Some(root.clone()),
            Error::Tokenizer { name, .. } => Some(name.clone()),
            Error::Setting(_)
            | Error::Unrepresentable(_)
            | Error::Stopped(_)
            | Error::Panicked(_) => None,
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
