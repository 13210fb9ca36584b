//! Parquet shards (`PREFIX-NNNNNN.parquet`): a `key` column (utf8) and one column per
//! field (binary, utf8 for text and JSON, int64/int32/float64 when cast with `--column`,
//! fixed-size binary with `dtype` and `shape` field metadata for `ndarray:DTYPE:SHAPE`),
//! compressed with zstd (default), snappy or nothing, row groups bounded by rows and
//! bytes, page-level statistics and the page index written, dictionary encoding off
//! for binary columns and the key (they do not repeat). Missing fields are nulls.
//!
//! Parquet input (`pack` over a directory of Parquet files) is [`input`].

mod column;
pub mod def;
mod encode;
mod error;
mod footer;
mod format;
mod group;
mod guard;
pub mod input;
mod inspect;
mod layout;
pub mod nested;
mod options;
mod pages;
pub mod rows;
mod strict;

pub use column::{ByteColumn, ColumnError};
pub(crate) use encode::{number_of, text_of};
pub use error::{DecodeError, ReadError};
pub use format::Parquet;
pub use group::{DECODE_LIMIT, DECODE_LIMIT_VAR, decode_limit, set_decode_limit};
pub use guard::{caught, guarded};
pub use inspect::ParquetInspector;
pub(crate) use layout::{Kind, accepts, kind_of};
pub use options::{ParquetCompression, ParquetOptions};
pub use rows::{ParquetFile, Rows};
pub use strict::StrictFile;
