//! Why a nested value cannot go to JSON text or come back from it.

use arrow_schema::{ArrowError, DataType};

/// Why a nested value cannot be turned into JSON text ([`super::to_json`]) or back
/// into an array ([`super::from_json`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NestedError {
    /// A value's text is not JSON.
    #[error("value {index} is not JSON: {source}")]
    NotJson {
        /// Its index among the values.
        index: usize,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A JSON value of another kind than the type needs.
    #[error("{expected} expected, found {found}")]
    Expected {
        /// What the type needs (`a list`, `a number`).
        expected: String,
        /// The value found, as debug text.
        found: String,
    },
    /// A binary value that is not base64.
    #[error("not base64 ({source}): {text:?}")]
    NotBase64 {
        /// The decoder's error.
        source: Box<dyn std::error::Error + Send + Sync>,
        /// The string.
        text: String,
    },
    /// A fixed-size list type of a size no list has.
    #[error("a list size of {0}")]
    ListSize(i32),
    /// A fixed-size list value of another length.
    #[error("a list of {want} expected, found {found}")]
    ListLength {
        /// The type's size.
        want: usize,
        /// The value's length.
        found: usize,
    },
    /// A map type whose entries are not a struct.
    #[error("a map whose entries are {0}")]
    MapEntries(DataType),
    /// More map entries than 32-bit offsets hold.
    #[error("a map too large")]
    MapTooLarge,
    /// More list items than the offsets hold.
    #[error("a list too large")]
    ListTooLarge,
    /// A value that does not cast to the column's type.
    #[error("as {to}: {source}")]
    Cast {
        /// The column's type.
        to: DataType,
        /// Arrow's error.
        source: ArrowError,
    },
    /// A map value with one key twice.
    #[error("is a map with the key `{0}` twice, which a JSON object cannot hold")]
    DuplicateKey(String),
    /// A dictionary whose keys are not integers.
    #[error("a dictionary with {0} keys")]
    DictionaryKeys(DataType),
    /// A dictionary key that indexes no value.
    #[error("a dictionary key {0} out of range")]
    DictionaryKey(i128),
    /// Arrow refused to build or format an array.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
}

impl NestedError {
    /// `expected` expected, `found` (its debug text) found.
    pub(super) fn expected(expected: impl Into<String>, found: &impl std::fmt::Debug) -> Self {
        NestedError::Expected {
            expected: expected.into(),
            found: format!("{found:?}"),
        }
    }
}
