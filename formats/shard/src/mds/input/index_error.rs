//! Why an MDS `index.json` cannot be read: the text completes "`index.json` ...".

use serde_json::Value;

use crate::columns::EncodingError;
use crate::mds::codec::CompressionError;

/// Why an index cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexError {
    /// There is none.
    #[error("does not exist (an MDS dataset has one at its root)")]
    Missing,
    /// Opening it failed.
    #[error("cannot be read: {0}")]
    Open(shardsmith_store::ReadError),
    /// Reading it failed.
    #[error("cannot be read: {0}")]
    Read(std::io::Error),
    /// Not JSON.
    #[error("is not valid JSON: {0}")]
    Json(serde_json::Error),
    /// JSON, but not an object.
    #[error("is not a JSON object")]
    NotObject,
    /// A version other than 2.
    #[error("has version {0}; MDS indices have version 2")]
    Version(Value),
    /// No version.
    #[error("has no `version` (MDS indices have version 2)")]
    NoVersion,
    /// No list of shards.
    #[error("has no `shards` list")]
    NoShards,
    /// A shard entry that cannot be read.
    #[error("shard entry {index}: {error}")]
    Entry {
        /// Its position in `shards`.
        index: usize,
        /// What is wrong with it.
        error: EntryError,
    },
}

/// Why one shard entry of an index cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntryError {
    /// A key the entry needs.
    #[error("has no `{0}` key")]
    NoKey(String),
    /// Not an MDS shard.
    #[error("has format {0}; only `mds` shards are read")]
    Format(Value),
    /// A shard version other than 2.
    #[error("has version {0}, not 2")]
    Version(Value),
    /// `samples` is not a count.
    #[error("`samples` is not a count")]
    Samples,
    /// `raw_data` names no file.
    #[error("raw_data {0}")]
    RawData(FileRefError),
    /// `zip_data` names no file.
    #[error("zip_data {0}")]
    ZipData(FileRefError),
    /// `compression` names no compression.
    #[error("compression: {0}")]
    Compression(CompressionError),
    /// `compression` is not a string.
    #[error("`compression` {0} is not a name")]
    CompressionName(Value),
    /// Compressed data whose codec is named nowhere.
    #[error("has zip_data but no compression that names its codec")]
    ZipCodec,
    /// The columns cannot be read.
    #[error(transparent)]
    Columns(#[from] ColumnsError),
    /// A column encoded differently by an earlier entry.
    #[error(
        "column `{column}` is {here} here but {theirs} in shard entry {other}; one field needs one encoding"
    )]
    EncodingDiffers {
        /// The column.
        column: String,
        /// Its encoding here.
        here: String,
        /// Its encoding in the earlier entry.
        theirs: String,
        /// The earlier entry.
        other: usize,
    },
    /// The sample counts add up past `u64`.
    #[error("the sample counts overflow")]
    Overflow,
}

/// Why a `raw_data` or `zip_data` object names no file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileRefError {
    /// No basename.
    #[error("has no `basename` string")]
    NoBasename,
    /// A basename outside the dataset.
    #[error("basename `{0}` is not a relative path inside the dataset")]
    Basename(String),
}

/// Why the columns of a shard entry cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ColumnsError {
    /// A list the entry needs.
    #[error("has no `{0}` list")]
    NoList(&'static str),
    /// A list item that is not a string.
    #[error("`{key}` holds {value}, not a string")]
    NotString {
        /// The list.
        key: &'static str,
        /// The item.
        value: Value,
    },
    /// Lists of different lengths.
    #[error("lists {names} column names, {encodings} encodings and {sizes} sizes")]
    Counts {
        /// Names.
        names: usize,
        /// Encodings.
        encodings: usize,
        /// Sizes.
        sizes: usize,
    },
    /// An encoding our readers do not know.
    #[error("column `{name}` has encoding `{encoding}`: {error}")]
    Encoding {
        /// The column.
        name: String,
        /// Its encoding.
        encoding: String,
        /// Why it is none.
        error: EncodingError,
    },
    /// A size that is not a byte count.
    #[error("column `{name}` has size {value}, not a byte count")]
    Size {
        /// The column.
        name: String,
        /// The size given.
        value: Value,
    },
    /// A size other than the encoding's.
    #[error("column `{name}` ({encoding}) has size {got}; the encoding stores {want} bytes")]
    FixedSize {
        /// The column.
        name: String,
        /// Its encoding.
        encoding: String,
        /// The size given.
        got: u64,
        /// The encoding's size.
        want: u64,
    },
    /// A column name that cannot be a field name.
    #[error("has column `{0}`, which cannot be a field name (empty, `/`, non-ASCII or `__`)")]
    FieldName(String),
    /// Two columns that differ only by case.
    #[error("has columns that differ only by case: `{other}` and `{name}`")]
    CaseClash {
        /// The earlier column.
        other: String,
        /// This column.
        name: String,
    },
}
