//! The one vocabulary of error kinds: every shardsmith library classifies its errors
//! with these words, the CLI reports them as `kind` under `--json` (see "Exit codes" in
//! `cli/README.md`), and scripts match on them. They are stable: a kind is added, never
//! renamed or removed.

use std::fmt;

/// What went wrong, in one stable snake_case word ([`ErrorKind::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// Arguments the command line parser or the command refused.
    Usage,
    /// A path or location that does not exist, or holds no files.
    NotFound,
    /// A path that must be a directory and is not.
    NotADirectory,
    /// An I/O operation failed (a full disk, a read-only output, a vanished file).
    Io,
    /// A signing key that cannot be used.
    Key,
    /// An option's value (or a file an option names) is invalid.
    Setting,
    /// `--strict` turned a skipped input into an error.
    Strict,
    /// The input holds nothing to pack.
    EmptyInput,
    /// Two input samples have one key.
    KeyCollision,
    /// The input holds nothing to tokenize.
    NoDocuments,
    /// An input the reader cannot use (a file that is not readable Parquet, a
    /// checkpoint file whose structure cannot be read).
    BadInput,
    /// A malformed input record under `--strict`.
    BadRecord,
    /// An input changed size while it was read.
    InputChanged,
    /// An input was removed while it was read.
    InputVanished,
    /// The output holds something the run must not overwrite.
    OutputConflict,
    /// A tokenizer that cannot be loaded or lacks a token it needs.
    Tokenizer,
    /// Tokens the output format cannot hold.
    Unrepresentable,
    /// Parts that cannot be merged.
    Merge,
    /// A dataset file the format could not write.
    Finish,
    /// A pipeline thread stopped because another failed.
    Stopped,
    /// A bug in shardsmith: a worker thread panicked.
    Panicked,
    /// A manifest that cannot be parsed.
    BadManifest,
    /// A file where a manifest is expected holds another tool's JSON.
    ForeignManifest,
    /// A file name that is not valid UTF-8.
    NonUtf8Name,
    /// A symlink where none may be.
    Symlink,
    /// An entry that is not a regular file.
    NotAFile,
    /// Data that did not verify, so it is not signed.
    Unverified,
    /// The location holds an unfinished run.
    UnfinishedRun,
    /// A split run's task that is missing, was run with other options, or twice at once.
    Task,
    /// A file or directory that holds no format the command reads.
    Unsupported,
    /// An object store request failed after its retries.
    Storage,
    /// No credentials were given and none were found.
    Credentials,
    /// A location that cannot be used: an unknown scheme, a bad URL, missing
    /// configuration.
    Location,
}

impl ErrorKind {
    /// The stable snake_case word (`bad_input`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::NotFound => "not_found",
            ErrorKind::NotADirectory => "not_a_directory",
            ErrorKind::Io => "io",
            ErrorKind::Key => "key",
            ErrorKind::Setting => "setting",
            ErrorKind::Strict => "strict",
            ErrorKind::EmptyInput => "empty_input",
            ErrorKind::KeyCollision => "key_collision",
            ErrorKind::NoDocuments => "no_documents",
            ErrorKind::BadInput => "bad_input",
            ErrorKind::BadRecord => "bad_record",
            ErrorKind::InputChanged => "input_changed",
            ErrorKind::InputVanished => "input_vanished",
            ErrorKind::OutputConflict => "output_conflict",
            ErrorKind::Tokenizer => "tokenizer",
            ErrorKind::Unrepresentable => "unrepresentable",
            ErrorKind::Merge => "merge",
            ErrorKind::Finish => "finish",
            ErrorKind::Stopped => "stopped",
            ErrorKind::Panicked => "panicked",
            ErrorKind::BadManifest => "bad_manifest",
            ErrorKind::ForeignManifest => "foreign_manifest",
            ErrorKind::NonUtf8Name => "non_utf8_name",
            ErrorKind::Symlink => "symlink",
            ErrorKind::NotAFile => "not_a_file",
            ErrorKind::Unverified => "unverified",
            ErrorKind::UnfinishedRun => "unfinished_run",
            ErrorKind::Task => "task",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Storage => "storage",
            ErrorKind::Credentials => "credentials",
            ErrorKind::Location => "location",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What every library error tells besides its message: its [`ErrorKind`] and the file,
/// directory or location it is about. Errors that wrap another crate's error report the
/// inner one's.
pub trait Classify {
    /// The stable kind.
    fn kind(&self) -> ErrorKind;

    /// The file, directory or location the error is about, if one.
    fn path(&self) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn words_are_serde_names() {
        for kind in [
            ErrorKind::Usage,
            ErrorKind::NotADirectory,
            ErrorKind::NonUtf8Name,
            ErrorKind::UnfinishedRun,
            ErrorKind::Credentials,
        ] {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }
}
