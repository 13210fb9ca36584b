//! The column types of a Parquet output ([`Kind`], from a column's encoding) and the
//! [`Layout`] every shard of one dataset shares.

use arrow_schema::{DataType, SchemaRef};
use parquet::file::properties::WriterProperties;

use super::nested;
use super::options::ParquetOptions;
use crate::Result;
use crate::columns::Encoding;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Utf8,
    Binary,
    Int,
    /// `int32` where asked for (`--column x:int32`, image sizes): 4-byte Parquet INT32.
    Int32,
    Float,
    /// `ndarray:DTYPE:SHAPE`: the raw values, row-major, little-endian, this many bytes
    /// (FIXED_LEN_BYTE_ARRAY), dtype and shape in the field's metadata.
    Fixed(u64),
    /// A nested column of a Parquet input (list, map, struct), its type kept: the
    /// values arrive as JSON text ([`nested`]) and are parsed back.
    Nested(DataType),
}

/// Why a column encoding has no Parquet column type here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoColumnType {
    /// An ndarray whose static size is no Parquet fixed length.
    #[error("a static shape of 1 to 2^31 - 1 bytes")]
    FixedSize,
    /// An encoding without a column type.
    #[error(
        "encoding `{0}` has no Parquet column type here; use str, json, bytes, int, int32, float64 or ndarray:DTYPE:SHAPE"
    )]
    Encoding(Encoding),
}

/// True when a column of `encoding` has a Parquet type here.
pub(crate) fn accepts(encoding: &Encoding) -> bool {
    kind_of(encoding).is_ok()
}

pub(crate) fn kind_of(encoding: &Encoding) -> Result<Kind, NoColumnType> {
    Ok(match encoding {
        Encoding::Str
        | Encoding::Json
        | Encoding::StrInt
        | Encoding::StrFloat
        | Encoding::StrDecimal => Kind::Utf8,
        Encoding::Bytes | Encoding::Jpeg | Encoding::Png => Kind::Binary,
        Encoding::Nested(t) if nested::carries(t) => Kind::Nested(t.clone()),
        Encoding::Nested(_) => Kind::Utf8,
        Encoding::Int => Kind::Int,
        Encoding::Scalar(d) if d.name().starts_with("float") => Kind::Float,
        Encoding::Scalar(d) if d.name() == "int32" => Kind::Int32,
        Encoding::Scalar(d) if d.name() != "uint64" => Kind::Int,
        Encoding::NdArray {
            dtype: Some(_),
            shape: Some(_),
        } => match encoding.fixed_size() {
            Some(n) if n > 0 && n <= i32::MAX as u64 => Kind::Fixed(n),
            _ => return Err(NoColumnType::FixedSize),
        },
        other => {
            return Err(NoColumnType::Encoding(other.clone()));
        }
    })
}

pub(super) struct Layout {
    pub(super) schema: SchemaRef,
    pub(super) kinds: Vec<Kind>,
    pub(super) encodings: Vec<Encoding>,
    pub(super) props: WriterProperties,
    pub(super) options: ParquetOptions,
}
