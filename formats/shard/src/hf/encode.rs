//! The encoder of one Hugging Face shard: rows gathered into Arrow column builders, a
//! record batch written to the IPC stream every [`BATCH_ROWS`] rows or [`BATCH_BYTES`]
//! bytes, the stream's bytes hashed on their way out (the shard's digest makes the
//! dataset's `_fingerprint`).

use std::io::{self, Read, Write};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use serde_json::{Value, json};
use xxhash_rust::xxh64::Xxh64;

use super::layout::{BATCH_BYTES, BATCH_ROWS, Layout, write_options};
use crate::format::{Field, Payload, ShardEncoder, ShardOut};
use crate::parquet::{Kind, number_of, text_of};

enum Column {
    Utf8(StringBuilder),
    Binary(BinaryBuilder),
    Int(Int64Builder),
    Int32(Int32Builder),
    Float(Float64Builder),
}

/// The shard's output, hashed as it is written.
struct Hashed {
    out: ShardOut,
    hash: Xxh64,
}

impl Write for Hashed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

pub(super) struct HfEncoder {
    layout: Arc<Layout>,
    writer: Option<StreamWriter<Hashed>>,
    columns: Vec<Column>,
    /// Rows of the current batch, and the bytes they take ([`Layout::value_bytes`]).
    batch_rows: usize,
    batch_bytes: u64,
    rows: u64,
    batches: u64,
}

impl HfEncoder {
    pub(super) fn new(layout: Arc<Layout>) -> Self {
        let columns = layout
            .kinds
            .iter()
            .map(|k| match k {
                Kind::Binary => Column::Binary(BinaryBuilder::new()),
                Kind::Int => Column::Int(Int64Builder::new()),
                Kind::Int32 => Column::Int32(Int32Builder::new()),
                Kind::Float => Column::Float(Float64Builder::new()),
                _ => Column::Utf8(StringBuilder::new()),
            })
            .collect();
        Self {
            layout,
            writer: None,
            columns,
            batch_rows: 0,
            batch_bytes: 0,
            rows: 0,
            batches: 0,
        }
    }

    fn writer(&mut self, out: &ShardOut) -> io::Result<&mut StreamWriter<Hashed>> {
        if self.writer.is_none() {
            let hashed = Hashed {
                out: out.clone(),
                hash: Xxh64::new(0),
            };
            let writer =
                StreamWriter::try_new_with_options(hashed, &self.layout.schema, write_options())
                    .map_err(io::Error::other)?;
            self.writer = Some(writer);
        }
        Ok(self.writer.as_mut().expect("just created"))
    }

    fn write_batch(&mut self, out: &ShardOut) -> io::Result<()> {
        if self.batch_rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|c| -> ArrayRef {
                match c {
                    Column::Utf8(b) => Arc::new(b.finish()),
                    Column::Binary(b) => Arc::new(b.finish()),
                    Column::Int(b) => Arc::new(b.finish()),
                    Column::Int32(b) => Arc::new(b.finish()),
                    Column::Float(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        let batch =
            RecordBatch::try_new(self.layout.schema.clone(), arrays).map_err(io::Error::other)?;
        self.batch_rows = 0;
        self.batch_bytes = 0;
        self.batches += 1;
        self.writer(out)?.write(&batch).map_err(io::Error::other)
    }
}

impl ShardEncoder for HfEncoder {
    fn add(&mut self, out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()> {
        let mut fields = fields.iter_mut().peekable();
        let layout = self.layout.clone();
        for (i, (column, kind)) in layout.schema.fields().iter().zip(&layout.kinds).enumerate() {
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
            self.batch_bytes += Layout::value_bytes(kind, value.as_ref().map(|v| v.len() as u64));
            let name = column.name();
            match (&mut self.columns[i], value) {
                (Column::Utf8(b), Some(v)) => b.append_value(text_of(&v, key, name)?),
                (Column::Binary(b), Some(v)) => b.append_value(&v),
                (Column::Int(b), Some(v)) => b.append_value(number_of::<i64>(&v, key, name)?),
                (Column::Int32(b), Some(v)) => b.append_value(number_of::<i32>(&v, key, name)?),
                (Column::Float(b), Some(v)) => b.append_value(number_of::<f64>(&v, key, name)?),
                (Column::Utf8(b), None) => b.append_null(),
                (Column::Binary(b), None) => b.append_null(),
                (Column::Int(b), None) => b.append_null(),
                (Column::Int32(b), None) => b.append_null(),
                (Column::Float(b), None) => b.append_null(),
            }
        }
        self.batch_rows += 1;
        self.rows += 1;
        if self.batch_rows >= BATCH_ROWS || self.batch_bytes >= BATCH_BYTES {
            self.write_batch(out)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut ShardOut) -> io::Result<Value> {
        self.write_batch(out)?;
        self.writer(out)?;
        let mut writer = self.writer.take().expect("created above");
        writer.finish().map_err(io::Error::other)?;
        let hashed = writer.into_inner().map_err(io::Error::other)?;
        let (rows, batches) = (self.rows, self.batches);
        self.rows = 0;
        self.batches = 0;
        Ok(json!({
            "rows": rows,
            "batches": batches,
            "xxh64": format!("{:016x}", hashed.hash.digest()),
        }))
    }
}
