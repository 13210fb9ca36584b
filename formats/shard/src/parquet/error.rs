//! Why a Parquet file cannot be read.

use std::fmt;

/// Why a Parquet file, or a part of it, cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The bytes are not what a Parquet reader reads: damaged, or not Parquet at all.
    Damaged(String),
    /// Encrypted (Parquet modular encryption): without its keys nothing of it can be
    /// read or checked. Not damage.
    Encrypted(String),
    /// Reading it needs more memory at once than shardsmith allows itself (a page or a
    /// row that decompresses to hundreds of megabytes). Not damage.
    TooLarge(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Damaged(why) | ReadError::Encrypted(why) | ReadError::TooLarge(why) => {
                f.write_str(why)
            }
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    /// What to say after the file's name: `is not a readable Parquet file: ...`, `is an
    /// encrypted Parquet file ...`, `is too large to read at once: ...`.
    pub fn predicate(&self) -> String {
        match self {
            ReadError::Damaged(why) => format!("is not a readable Parquet file: {why}"),
            ReadError::Encrypted(why) => why.clone(),
            ReadError::TooLarge(why) => format!("is too large to read at once: {why}"),
        }
    }
}

impl From<String> for ReadError {
    fn from(why: String) -> Self {
        ReadError::Damaged(why)
    }
}

/// Why the parquet crate could not decode part of a file: its error, a panic caught by
/// [`super::guarded`], or a footer that the crate must not be given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The parquet or arrow crate panicked on the data.
    #[error("the Parquet reader failed on malformed data: {0}")]
    Panicked(String),
    /// The parquet crate refused the data.
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// The arrow crate refused the data.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A column chunk the footer places outside the file.
    #[error(
        "the footer puts row group {group}, column {column} ({path}) at bytes {start}..+{len}, \
         outside the file of {file_len} bytes"
    )]
    ChunkOutside {
        /// Row group index.
        group: usize,
        /// Column index.
        column: usize,
        /// The column's path.
        path: String,
        /// Start the footer gives.
        start: i64,
        /// Length the footer gives.
        len: i64,
        /// Size of the file.
        file_len: u64,
    },
    /// The dictionary page's bytes cannot be read.
    #[error("the dictionary page cannot be read: {0}")]
    Dictionary(std::io::Error),
    /// The dictionary page reads as something else.
    #[error("the dictionary page does not read as one")]
    NotDictionary,
    /// A part of the file read before (a row group's metadata) cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl From<DecodeError> for ReadError {
    fn from(e: DecodeError) -> Self {
        match e {
            DecodeError::Read(e) => e,
            e => ReadError::Damaged(e.to_string()),
        }
    }
}
