//! The options of `pack --format parquet`: compression and row group bounds.

use crate::Result;

/// Parquet compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParquetCompression {
    /// Zstandard at a level (1–22).
    Zstd(i32),
    /// Snappy.
    Snappy,
    /// None.
    None,
}

/// Why a text names no Parquet compression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompressionError {
    /// A zstd level outside 1 to 22.
    #[error("zstd levels are 1 to 22, not `{0}`")]
    Level(String),
    /// Not zstd, snappy or none.
    #[error("unknown Parquet compression `{0}`; use zstd[:LEVEL], snappy or none")]
    Unknown(String),
}

impl ParquetCompression {
    /// Parses `zstd[:LEVEL]`, `snappy` or `none`.
    pub fn parse(text: &str) -> Result<Self, CompressionError> {
        match text.split_once(':') {
            None if text == "zstd" => Ok(ParquetCompression::Zstd(3)),
            None if text == "snappy" => Ok(ParquetCompression::Snappy),
            None if text == "none" => Ok(ParquetCompression::None),
            Some(("zstd", level)) => match level.parse::<i32>() {
                Ok(l) if (1..=22).contains(&l) => Ok(ParquetCompression::Zstd(l)),
                _ => Err(CompressionError::Level(level.to_string())),
            },
            _ => Err(CompressionError::Unknown(text.to_string())),
        }
    }

    pub(super) fn name(self) -> String {
        match self {
            ParquetCompression::Zstd(l) => format!("zstd:{l}"),
            ParquetCompression::Snappy => "snappy".into(),
            ParquetCompression::None => "none".into(),
        }
    }
}

/// Parquet options.
#[derive(Clone, Debug)]
pub struct ParquetOptions {
    /// Column compression.
    pub compression: ParquetCompression,
    /// Most rows per row group.
    pub row_group_rows: usize,
    /// Most (encoded, in-memory) bytes per row group.
    pub row_group_bytes: usize,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        Self {
            compression: ParquetCompression::Zstd(3),
            row_group_rows: 1 << 20,
            row_group_bytes: 128 << 20,
        }
    }
}
