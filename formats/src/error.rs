use std::path::PathBuf;

/// Errors that stop a `pack` run. Inputs that are merely left out are not errors: they
/// are listed as skipped (unless `--strict` makes them errors).
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
    /// Nothing to pack.
    #[error("no samples to pack in `{root}`{detail}")]
    EmptyInput {
        /// The input root.
        root: String,
        /// Why (e.g. how many files were skipped).
        detail: String,
    },
    /// An input file changed size between listing and reading.
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
    /// An input file was listed but is gone when its shard is written.
    #[error(
        "input `{path}` disappeared while packing (listed with {listed} bytes); re-run to pack the input as it is now"
    )]
    InputVanished {
        /// The input.
        path: String,
        /// Size when listed.
        listed: u64,
    },
    /// The output directory holds something this run must not overwrite.
    #[error("output `{dir}` {reason}")]
    OutputConflict {
        /// The output directory.
        dir: String,
        /// What is there.
        reason: String,
    },
    /// A tokenizer cannot be loaded or lacks a token it needs.
    #[error("tokenizer `{name}` {reason}")]
    Tokenizer {
        /// Encoding name or tokenizer.json path.
        name: String,
        /// What is wrong.
        reason: String,
    },
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
    /// A setting is invalid.
    #[error("{0}")]
    Setting(String),
    /// A manifest operation failed.
    #[error(transparent)]
    Manifest(#[from] shardsmith_manifest::Error),
}

impl Error {
    /// Stable snake_case name of the variant, as `--json` reports it (`output_conflict`).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::Strict { .. } => "strict",
            Error::EmptyInput { .. } => "empty_input",
            Error::InputChanged { .. } => "input_changed",
            Error::InputVanished { .. } => "input_vanished",
            Error::OutputConflict { .. } => "output_conflict",
            Error::Tokenizer { .. } => "tokenizer",
            Error::NoDocuments { .. } => "no_documents",
            Error::BadRecord { .. } => "bad_record",
            Error::Setting(_) => "setting",
            Error::Manifest(e) => e.kind(),
        }
    }

    /// The file or directory the error is about, if one.
    pub fn path(&self) -> Option<String> {
        match self {
            Error::Io { path, .. } => Some(path.display().to_string()),
            Error::Strict { path, .. }
            | Error::InputChanged { path, .. }
            | Error::InputVanished { path, .. }
            | Error::BadRecord { path, .. } => Some(path.clone()),
            Error::EmptyInput { root, .. } | Error::NoDocuments { root, .. } => Some(root.clone()),
            Error::OutputConflict { dir, .. } => Some(dir.clone()),
            Error::Tokenizer { name, .. } => Some(name.clone()),
            Error::Setting(_) => None,
            Error::Manifest(e) => e.path(),
        }
    }

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
