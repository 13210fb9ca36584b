//! The crate's error: why the tensors of a checkpoint cannot be read, or a `diff --map`
//! rule file was refused. Problems found *in* a checkpoint while verifying it are
//! [`Finding`](shardsmith_manifest::Finding)s, not errors.

use std::path::Path;

use shardsmith_manifest::{Classify, ErrorKind};

/// Why a checkpoint operation cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file cannot be read.
    #[error("`{path}`: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A file cannot be opened, or its first bytes read.
    #[error("`{path}` cannot be read: {source}")]
    Unreadable {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A file's structure does not describe its tensors readably.
    #[error("`{path}`: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A file or directory that holds no checkpoint format shardsmith reads tensors of.
    #[error("`{path}`: {reason}")]
    Unsupported {
        /// The file or directory.
        path: String,
        /// What it is, and what is read.
        reason: String,
    },
    /// A `diff --map` rule file was refused (an option's value: kind `setting`).
    #[error(transparent)]
    Rule(#[from] RuleError),
}

/// Why a rule file was refused.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{path} line {line}: {reason}")]
pub struct RuleError {
    /// The rule file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } | Error::Unreadable { .. } => ErrorKind::Io,
            Error::Malformed { .. } => ErrorKind::BadInput,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Rule(_) => ErrorKind::Setting,
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. }
            | Error::Unreadable { path, .. }
            | Error::Malformed { path, .. }
            | Error::Unsupported { path, .. } => Some(path.clone()),
            Error::Rule(e) => Some(e.path.clone()),
        }
    }
}

impl Error {
    pub(crate) fn malformed(path: &Path, reason: impl Into<String>) -> Self {
        Error::Malformed {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
