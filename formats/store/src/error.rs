use std::path::PathBuf;

use shardsmith_manifest::{Classify, ErrorKind};

/// Errors of reading inputs and writing outputs.
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
    /// The output holds something this run must not overwrite.
    #[error("output `{dir}` {reason}")]
    OutputConflict {
        /// The output directory.
        dir: String,
        /// What is there.
        reason: String,
    },
    /// An object store request failed (after its retries).
    #[error("{op} `{url}`: {message}")]
    Remote {
        /// What was being done (`listing`, `uploading`).
        op: &'static str,
        /// The object or prefix, as a URL.
        url: String,
        /// The store's answer, with any secret removed.
        message: String,
    },
    /// The store could not be reached with any credentials: none were given and no
    /// instance metadata service gave any.
    #[error("`{url}`: {message}")]
    Credentials {
        /// The location, as a URL.
        url: String,
        /// What was looked for and how to give it.
        message: String,
    },
    /// A location that cannot be used: an unknown scheme, a bad URL, missing or invalid
    /// configuration.
    #[error("`{url}`: {message}")]
    Location {
        /// The location as given.
        url: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The tasks of a split run cannot go on or be finished: one is missing, was run
    /// with other options, or was run twice at once.
    #[error("{0}")]
    Task(String),
    /// The location holds an unfinished run (its state and no manifest): refused, so
    /// that part of a dataset is never passed off as the whole.
    #[error("`{location}` holds {what}; {advice}")]
    Unfinished {
        /// The location, as given.
        location: String,
        /// The run, in words ([`shardsmith_manifest::unfinished::Unfinished::describe`]).
        what: String,
        /// Why it is refused and what to do.
        advice: String,
    },
    /// The location holds no file at all (a prefix or bucket that does not exist).
    #[error("`{location}` holds no files: {advice}")]
    Empty {
        /// The location, as given.
        location: String,
        /// What to check.
        advice: String,
    },
    /// A manifest operation failed.
    #[error(transparent)]
    Manifest(#[from] shardsmith_manifest::Error),
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::OutputConflict { .. } => ErrorKind::OutputConflict,
            Error::Remote { .. } => ErrorKind::Storage,
            Error::Location { .. } => ErrorKind::Location,
            Error::Credentials { .. } => ErrorKind::Credentials,
            Error::Task(_) => ErrorKind::Task,
            Error::Unfinished { .. } => ErrorKind::UnfinishedRun,
            Error::Empty { .. } => ErrorKind::NotFound,
            Error::Manifest(e) => e.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. } => Some(path.display().to_string()),
            Error::OutputConflict { dir, .. } => Some(dir.clone()),
            Error::Remote { url, .. }
            | Error::Location { url, .. }
            | Error::Credentials { url, .. } => Some(url.clone()),
            Error::Task(_) => None,
            Error::Unfinished { location, .. } | Error::Empty { location, .. } => {
                Some(location.clone())
            }
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
