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
mod error;
mod footer;
mod group;
mod guard;
pub mod input;
mod inspect;
pub mod nested;
mod options;
mod pages;
pub mod rows;
mod strict;

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, FixedSizeBinaryBuilder, Float64Builder, Int32Builder, Int64Builder,
    StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field as ArrowField, Schema, SchemaRef};
pub use column::{ByteColumn, ColumnError};
pub use error::{DecodeError, ReadError};
pub use group::{DECODE_LIMIT, DECODE_LIMIT_VAR, decode_limit, set_decode_limit};
pub use guard::guarded;
pub use inspect::ParquetInspector;
pub use options::{ParquetCompression, ParquetOptions};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression as Codec, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
pub use rows::{ParquetFile, Rows};
use serde_json::{Value, json};
pub use strict::StrictFile;

use crate::columns::Encoding;
use crate::format::{BadValue, Field, Payload, ShardEncoder, ShardFormat, ShardOut};
use crate::sample::SampleSpec;
use crate::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
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
enum NoColumnType {
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

fn kind_of(encoding: &Encoding) -> Result<Kind, NoColumnType> {
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

struct Layout {
    schema: SchemaRef,
    kinds: Vec<Kind>,
    encodings: Vec<Encoding>,
    props: WriterProperties,
    options: ParquetOptions,
}

/// The Parquet format configured for one dataset.
pub struct Parquet {
    layout: Arc<Layout>,
}

impl Parquet {
    /// Configures Parquet for `samples`: the key column, then one column per field any
    /// sample has, in name order.
    pub fn new(
        options: &ParquetOptions,
        overrides: &BTreeMap<String, Encoding>,
        key_column: &str,
        samples: &[SampleSpec],
    ) -> Result<Self> {
        let fields = crate::sample::field_names(samples);
        if fields.contains(key_column) {
            return Err(Error::Setting(format!(
                "a field is named `{key_column}`, which is the key column; name the key column differently with --key-column"
            )));
        }
        for name in overrides.keys() {
            if !fields.contains(name.as_str()) {
                return Err(Error::Setting(format!(
                    "--column `{name}`: no sample has that field"
                )));
            }
        }
        let mut columns = vec![ArrowField::new(key_column, DataType::Utf8, false)];
        let mut kinds = vec![Kind::Utf8];
        let mut encodings = vec![Encoding::Str];
        let mut builder = WriterProperties::builder()
            .set_compression(match options.compression {
                ParquetCompression::Zstd(l) => {
                    Codec::ZSTD(ZstdLevel::try_new(l).map_err(|e| Error::Setting(e.to_string()))?)
                }
                ParquetCompression::Snappy => Codec::SNAPPY,
                ParquetCompression::None => Codec::UNCOMPRESSED,
            })
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_statistics_truncate_length(Some(64))
            .set_column_index_truncate_length(Some(64))
            .set_max_row_group_row_count(Some(options.row_group_rows))
            .set_max_row_group_bytes(Some(options.row_group_bytes))
            .set_created_by(format!("shardsmith {}", env!("CARGO_PKG_VERSION")))
            .set_column_dictionary_enabled(ColumnPath::from(key_column), false);
        for name in &fields {
            let encoding = overrides
                .get(*name)
                .cloned()
                .unwrap_or_else(|| Encoding::for_field(name));
            let kind = kind_of(&encoding)
                .map_err(|e| Error::Setting(format!("--column `{name}`: {e}")))?;
            let data_type = match &kind {
                Kind::Utf8 => DataType::Utf8,
                Kind::Binary => DataType::Binary,
                Kind::Int => DataType::Int64,
                Kind::Int32 => DataType::Int32,
                Kind::Float => DataType::Float64,
                Kind::Fixed(n) => DataType::FixedSizeBinary(*n as i32),
                Kind::Nested(t) => t.clone(),
            };
            if matches!(kind, Kind::Binary | Kind::Fixed(_)) {
                builder = builder.set_column_dictionary_enabled(ColumnPath::from(*name), false);
            }
            let mut column = ArrowField::new(*name, data_type, true);
            if let Encoding::NdArray {
                dtype: Some(d),
                shape: Some(shape),
            } = &encoding
            {
                column = column.with_metadata(std::collections::HashMap::from([
                    ("dtype".to_string(), d.name().to_string()),
                    ("shape".to_string(), json!(shape).to_string()),
                ]));
            }
            columns.push(column);
            kinds.push(kind);
            encodings.push(encoding);
        }
        Ok(Self {
            layout: Arc::new(Layout {
                schema: Arc::new(Schema::new(columns)),
                kinds,
                encodings,
                props: builder.build(),
                options: options.clone(),
            }),
        })
    }
}

impl ShardFormat for Parquet {
    fn name(&self) -> &'static str {
        "parquet"
    }

    fn shard_name(&self, prefix: &str, index: usize) -> String {
        format!("{prefix}-{index:06}.parquet")
    }

    fn refuse(&self, _sample: &SampleSpec) -> Option<String> {
        None
    }

    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        // Plain encoding: 4-byte length plus the value, before compression (an upper
        // bound of the compressed size for the data this format is for).
        4 + sample.key.len() as u64 + sample.fields.iter().map(|f| 4 + f.encoded).sum::<u64>()
    }

    fn shard_overhead(&self) -> u64 {
        4096
    }

    fn check_values(&self, sample: &SampleSpec, values: &[&[u8]]) -> Result<(), BadValue> {
        for (field, value) in sample.fields.iter().zip(values) {
            if let Some(i) = self
                .layout
                .schema
                .fields()
                .iter()
                .position(|c| c.name() == &*field.ext)
            {
                self.layout.encodings[i]
                    .encode(value)
                    .map_err(|e| BadValue::new(&field.ext, e, None))?;
            }
        }
        Ok(())
    }

    fn options(&self) -> BTreeMap<String, Value> {
        let mut options = BTreeMap::new();
        let columns: serde_json::Map<String, Value> = self
            .layout
            .schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), Value::from(f.data_type().to_string())))
            .collect();
        options.insert("columns".into(), Value::Object(columns));
        options.insert(
            "compression".into(),
            Value::from(self.layout.options.compression.name()),
        );
        options.insert(
            "row_group_rows".into(),
            Value::from(self.layout.options.row_group_rows),
        );
        options.insert(
            "row_group_bytes".into(),
            Value::from(self.layout.options.row_group_bytes),
        );
        options
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        Box::new(ParquetEncoder {
            layout: self.layout.clone(),
            writer: None,
            batch: Batch::new(&self.layout),
            rows: 0,
        })
    }
}

enum ColumnBuilder {
    Utf8(StringBuilder),
    Binary(BinaryBuilder),
    Int(Int64Builder),
    Int32(Int32Builder),
    Float(Float64Builder),
    Fixed(FixedSizeBinaryBuilder),
    /// The JSON texts of a batch's values, parsed into the column's type at its end.
    Nested(DataType, Vec<Option<Vec<u8>>>),
}

struct Batch {
    columns: Vec<ColumnBuilder>,
    rows: usize,
    bytes: usize,
}

impl Batch {
    fn new(layout: &Layout) -> Self {
        let columns = layout
            .kinds
            .iter()
            .map(|k| match k {
                Kind::Utf8 => ColumnBuilder::Utf8(StringBuilder::new()),
                Kind::Binary => ColumnBuilder::Binary(BinaryBuilder::new()),
                Kind::Int => ColumnBuilder::Int(Int64Builder::new()),
                Kind::Int32 => ColumnBuilder::Int32(Int32Builder::new()),
                Kind::Float => ColumnBuilder::Float(Float64Builder::new()),
                Kind::Fixed(n) => ColumnBuilder::Fixed(FixedSizeBinaryBuilder::new(*n as i32)),
                Kind::Nested(t) => ColumnBuilder::Nested(t.clone(), Vec::new()),
            })
            .collect();
        Self {
            columns,
            rows: 0,
            bytes: 0,
        }
    }

    fn finish(&mut self, schema: &SchemaRef) -> io::Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .zip(schema.fields())
            .map(|(c, field)| -> io::Result<ArrayRef> {
                Ok(match c {
                    ColumnBuilder::Utf8(b) => Arc::new(b.finish()),
                    ColumnBuilder::Binary(b) => Arc::new(b.finish()),
                    ColumnBuilder::Int(b) => Arc::new(b.finish()),
                    ColumnBuilder::Int32(b) => Arc::new(b.finish()),
                    ColumnBuilder::Float(b) => Arc::new(b.finish()),
                    ColumnBuilder::Fixed(b) => Arc::new(b.finish()),
                    ColumnBuilder::Nested(t, values) => {
                        let texts: Vec<Option<&[u8]>> =
                            values.iter().map(Option::as_deref).collect();
                        let array = nested::from_json(t, &texts).map_err(|e| {
                            io::Error::other(format!(
                                "field `{}`: a value does not fit its column type {t}: {e}",
                                field.name()
                            ))
                        })?;
                        values.clear();
                        array
                    }
                })
            })
            .collect::<io::Result<_>>()?;
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(schema.clone(), arrays).map_err(io::Error::other)
    }
}

/// Rows per batch handed to the Arrow writer (and bytes, whichever comes first).
const BATCH_ROWS: usize = 4096;
const BATCH_BYTES: usize = 8 << 20;

struct ParquetEncoder {
    layout: Arc<Layout>,
    writer: Option<ArrowWriter<ShardOut>>,
    batch: Batch,
    rows: u64,
}

impl ParquetEncoder {
    fn writer(&mut self, out: &ShardOut) -> io::Result<&mut ArrowWriter<ShardOut>> {
        if self.writer.is_none() {
            let writer = ArrowWriter::try_new(
                out.clone(),
                self.layout.schema.clone(),
                Some(self.layout.props.clone()),
            )
            .map_err(io::Error::other)?;
            self.writer = Some(writer);
        }
        Ok(self.writer.as_mut().expect("just created"))
    }

    fn write_batch(&mut self, out: &ShardOut) -> io::Result<()> {
        if self.batch.rows == 0 {
            return Ok(());
        }
        let batch = self.batch.finish(&self.layout.schema)?;
        self.writer(out)?.write(&batch).map_err(io::Error::other)
    }
}

fn text_of<'a>(value: &'a [u8], key: &str, column: &str) -> io::Result<&'a str> {
    std::str::from_utf8(value)
        .map_err(|_| io::Error::other(format!("sample `{key}` field `{column}` is not UTF-8")))
}

/// A number column's value: its text, trimmed, `_` separators allowed (`1_000`).
fn number_of<T: std::str::FromStr>(value: &[u8], key: &str, column: &str) -> io::Result<T>
where
    T::Err: std::fmt::Display,
{
    text_of(value, key, column)?
        .trim()
        .replace('_', "")
        .parse::<T>()
        .map_err(|e| io::Error::other(format!("sample `{key}` field `{column}`: {e}")))
}

impl ShardEncoder for ParquetEncoder {
    fn add(&mut self, out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()> {
        let mut fields = fields.iter_mut().peekable();
        let schema = self.layout.schema.clone();
        for (i, column) in schema.fields().iter().enumerate() {
            let value: Option<std::borrow::Cow<'_, [u8]>> = if i == 0 {
                Some(key.as_bytes().into())
            } else if fields.peek().is_some_and(|f| f.ext == column.name()) {
                let field = fields.next().expect("peeked");
                Some(match &mut field.payload {
                    Payload::Bytes(b) => (*b).into(),
                    Payload::Stream(r) => {
                        let mut data = Vec::with_capacity(field.size as usize);
                        r.take(field.size).read_to_end(&mut data)?;
                        data.into()
                    }
                })
            } else {
                None
            };
            self.batch.bytes += value.as_ref().map_or(0, |v| v.len());
            let name = column.name();
            match (&mut self.batch.columns[i], value) {
                (ColumnBuilder::Utf8(b), Some(v)) => b.append_value(text_of(&v, key, name)?),
                (ColumnBuilder::Binary(b), Some(v)) => b.append_value(&v),
                (ColumnBuilder::Int(b), Some(v)) => {
                    b.append_value(number_of::<i64>(&v, key, name)?)
                }
                (ColumnBuilder::Int32(b), Some(v)) => {
                    b.append_value(number_of::<i32>(&v, key, name)?)
                }
                (ColumnBuilder::Float(b), Some(v)) => {
                    b.append_value(number_of::<f64>(&v, key, name)?)
                }
                (ColumnBuilder::Utf8(b), None) => b.append_null(),
                (ColumnBuilder::Binary(b), None) => b.append_null(),
                (ColumnBuilder::Int(b), None) => b.append_null(),
                (ColumnBuilder::Int32(b), None) => b.append_null(),
                (ColumnBuilder::Float(b), None) => b.append_null(),
                (ColumnBuilder::Fixed(b), Some(v)) => {
                    let raw = self.layout.encodings[i].encode(&v).map_err(|e| {
                        io::Error::other(format!("sample `{key}` field `{name}` {e}"))
                    })?;
                    b.append_value(raw).map_err(io::Error::other)?;
                }
                (ColumnBuilder::Fixed(b), None) => b.append_null(),
                (ColumnBuilder::Nested(_, values), v) => values.push(v.map(|v| v.into_owned())),
            }
        }
        self.batch.rows += 1;
        self.rows += 1;
        if self.batch.rows >= BATCH_ROWS || self.batch.bytes >= BATCH_BYTES {
            self.write_batch(out)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut ShardOut) -> io::Result<Value> {
        self.write_batch(out)?;
        self.writer(out)?;
        let writer = self.writer.take().expect("created above");
        let metadata = writer.close().map_err(io::Error::other)?;
        Ok(json!({"rows": self.rows, "row_groups": metadata.num_row_groups()}))
    }
}
