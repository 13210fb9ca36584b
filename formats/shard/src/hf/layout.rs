//! The columns of a Hugging Face output ([`Layout`]: the Arrow schema, its `huggingface`
//! features metadata, each column's [`Kind`]) and the bytes a row and a record batch
//! take in the Arrow IPC stream, from which shards are planned.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::MetadataVersion;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_schema::{DataType, Field as ArrowField, Schema, SchemaRef};

use crate::columns::Encoding;
use crate::parquet::{Kind, kind_of};
use crate::sample::SampleSpec;
use crate::{Error, Result};

/// Rows per record batch (and bytes of its rows, whichever comes first): a shard is
/// written one batch at a time, so memory stays bounded whatever the shard size.
pub(super) const BATCH_ROWS: usize = 1000;
pub(super) const BATCH_BYTES: u64 = 8 << 20;
/// Body alignment of the IPC messages: 8 bytes, as pyarrow writes them.
const ALIGNMENT: usize = 8;

/// The IPC options of every shard.
pub(super) fn write_options() -> IpcWriteOptions {
    IpcWriteOptions::try_new(ALIGNMENT, false, MetadataVersion::V5).expect("valid options")
}

/// The `datasets` feature of a column kind (`Value` dtype), or `None` when HF output
/// has no column for it.
pub(super) fn dtype(kind: &Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Utf8 => "string",
        Kind::Binary => "binary",
        Kind::Int => "int64",
        Kind::Int32 => "int32",
        Kind::Float => "float64",
        Kind::Fixed(_) | Kind::Nested(_) => return None,
    })
}

/// The column kind of `encoding` in HF output: Parquet's rule ([`kind_of`]), except
/// that a nested column of an input (a list, a struct) is its JSON text in a `string`
/// column, and that fixed-size arrays (`ndarray:DTYPE:SHAPE`) have no column here.
pub(super) fn hf_kind(encoding: &Encoding) -> std::result::Result<Kind, String> {
    let kind = match kind_of(encoding).map_err(|e| e.to_string())? {
        Kind::Nested(_) => Kind::Utf8,
        kind => kind,
    };
    match dtype(&kind) {
        Some(_) => Ok(kind),
        None => Err(format!(
            "encoding `{encoding}` has no Hugging Face column here; use str, json, bytes, int, int32 or float64"
        )),
    }
}

/// The columns of one dataset and what their rows cost in a shard.
pub(super) struct Layout {
    pub(super) schema: SchemaRef,
    pub(super) kinds: Vec<Kind>,
    pub(super) encodings: Vec<Encoding>,
    /// `dataset_info.json`'s `features`, as JSON text (columns in schema order).
    pub(super) features: String,
    /// Bytes of the schema message and the end-of-stream marker.
    pub(super) fixed: u64,
    /// Most bytes a record batch adds besides its rows' [`Layout::row_bytes`]: its
    /// message header, validity bitmaps, the extra offset and padding of each buffer.
    pub(super) per_batch: u64,
}

impl Layout {
    pub(super) fn new(
        key_column: &str,
        overrides: &BTreeMap<String, Encoding>,
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
        let mut names = vec![key_column.to_string()];
        let mut kinds = vec![Kind::Utf8];
        let mut encodings = vec![Encoding::Str];
        for name in &fields {
            let encoding = overrides
                .get(*name)
                .cloned()
                .unwrap_or_else(|| Encoding::for_field(name));
            let kind = hf_kind(&encoding)
                .map_err(|e| Error::Setting(format!("--column `{name}`: {e}")))?;
            names.push((*name).to_string());
            kinds.push(kind);
            encodings.push(encoding);
        }
        let features = features_json(&names, &kinds);
        let metadata = HashMap::from([(
            "huggingface".to_string(),
            format!("{{\"info\": {{\"features\": {features}}}}}"),
        )]);
        let columns: Vec<ArrowField> = names
            .iter()
            .zip(&kinds)
            .map(|(name, kind)| ArrowField::new(name, arrow_type(kind), true))
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(columns, metadata));
        let (fixed, empty_batch) = measure(&schema)?;
        // Per column at most: a validity bitmap of a full batch, one more offset, and
        // up to 7 bytes of padding after each of its (at most 3) buffers.
        let per_column = (BATCH_ROWS as u64).div_ceil(8) + 4 + 3 * 7;
        let per_batch = empty_batch + per_column * kinds.len() as u64;
        Ok(Self {
            schema,
            kinds,
            encodings,
            features,
            fixed,
            per_batch,
        })
    }

    /// Bytes a row of this many value bytes per column (`None`: null) takes in a
    /// batch's buffers: an offset and the bytes for text and binary, the width for
    /// numbers (nulls too).
    pub(super) fn value_bytes(kind: &Kind, len: Option<u64>) -> u64 {
        match kind {
            Kind::Utf8 | Kind::Binary => 4 + len.unwrap_or(0),
            Kind::Int | Kind::Float => 8,
            Kind::Int32 => 4,
            Kind::Fixed(n) => *n,
            Kind::Nested(_) => len.unwrap_or(0),
        }
    }

    /// [`Layout::value_bytes`] of a whole sample (fields sorted by name, as the
    /// columns after the key are).
    pub(super) fn row_bytes(&self, sample: &SampleSpec) -> u64 {
        let mut fields = sample.fields.iter().peekable();
        let mut total = Self::value_bytes(&Kind::Utf8, Some(sample.key.len() as u64));
        for (column, kind) in self.schema.fields().iter().zip(&self.kinds).skip(1) {
            let len = match fields.peek() {
                Some(f) if *f.ext == **column.name() => fields.next().map(|f| f.encoded),
                _ => None,
            };
            total += Self::value_bytes(kind, len);
        }
        total
    }
}

/// The Arrow type of a column kind (as `datasets` types its features).
fn arrow_type(kind: &Kind) -> DataType {
    match kind {
        Kind::Utf8 => DataType::Utf8,
        Kind::Int => DataType::Int64,
        Kind::Int32 => DataType::Int32,
        Kind::Float => DataType::Float64,
        _ => DataType::Binary,
    }
}

/// `{"name": {"dtype": "string", "_type": "Value"}, ...}` as Python's `json.dumps`
/// spells it (the features `datasets` records in the schema and `dataset_info.json`).
pub(super) fn features_json(names: &[String], kinds: &[Kind]) -> String {
    let entries: Vec<String> = names
        .iter()
        .zip(kinds)
        .map(|(name, kind)| {
            format!(
                "{}: {{\"dtype\": \"{}\", \"_type\": \"Value\"}}",
                serde_json::to_string(name).expect("a string"),
                dtype(kind).unwrap_or("binary")
            )
        })
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// Bytes of the schema message plus the end marker, and of an empty record batch.
fn measure(schema: &SchemaRef) -> Result<(u64, u64)> {
    let fail = |e: arrow_schema::ArrowError| Error::Setting(format!("Arrow IPC: {e}"));
    let mut writer =
        StreamWriter::try_new_with_options(Vec::new(), schema, write_options()).map_err(fail)?;
    let header = writer.get_ref().len() as u64;
    writer
        .write(&RecordBatch::new_empty(schema.clone()))
        .map_err(fail)?;
    let batch = writer.get_ref().len() as u64 - header;
    writer.finish().map_err(fail)?;
    let end = writer.get_ref().len() as u64 - header - batch;
    Ok((header + end, batch))
}
