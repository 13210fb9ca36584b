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
