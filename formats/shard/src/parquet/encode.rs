//! The encoder of one Parquet shard: rows gathered into Arrow column builders, a batch
//! handed to the Arrow writer every [`BATCH_ROWS`] rows or [`BATCH_BYTES`] bytes.

use std::io::{self, Read};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, FixedSizeBinaryBuilder, Float64Builder, Int32Builder, Int64Builder,
    StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use serde_json::{Value, json};

use super::layout::{Kind, Layout};
use super::nested;
use crate::format::{Field, Payload, ShardEncoder, ShardOut};

pub(super) enum ColumnBuilder {
    Utf8(StringBuilder),
    Binary(BinaryBuilder),
    Int(Int64Builder),
    Int32(Int32Builder),
    Float(Float64Builder),
    Fixed(FixedSizeBinaryBuilder),
    /// The JSON texts of a batch's values, parsed into the column's type at its end.
    Nested(DataType, Vec<Option<Vec<u8>>>),
}

pub(super) struct Batch {
    pub(super) columns: Vec<ColumnBuilder>,
    pub(super) rows: usize,
    pub(super) bytes: usize,
}

impl Batch {
    pub(super) fn new(layout: &Layout) -> Self {
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

    pub(super) fn finish(&mut self, schema: &SchemaRef) -> io::Result<RecordBatch> {
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
pub(super) const BATCH_ROWS: usize = 4096;
pub(super) const BATCH_BYTES: usize = 8 << 20;

pub(super) struct ParquetEncoder {
    pub(super) layout: Arc<Layout>,
    pub(super) writer: Option<ArrowWriter<ShardOut>>,
    pub(super) batch: Batch,
    pub(super) rows: u64,
}

impl ParquetEncoder {
    pub(super) fn writer(&mut self, out: &ShardOut) -> io::Result<&mut ArrowWriter<ShardOut>> {
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

    pub(super) fn write_batch(&mut self, out: &ShardOut) -> io::Result<()> {
        if self.batch.rows == 0 {
            return Ok(());
        }
        let batch = self.batch.finish(&self.layout.schema)?;
        self.writer(out)?.write(&batch).map_err(io::Error::other)
    }
}

pub(crate) fn text_of<'a>(value: &'a [u8], key: &str, column: &str) -> io::Result<&'a str> {
    std::str::from_utf8(value)
        .map_err(|_| io::Error::other(format!("sample `{key}` field `{column}` is not UTF-8")))
}

/// A number column's value: its text, trimmed, `_` separators allowed (`1_000`).
pub(crate) fn number_of<T: std::str::FromStr>(
    value: &[u8],
    key: &str,
    column: &str,
) -> io::Result<T>
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
