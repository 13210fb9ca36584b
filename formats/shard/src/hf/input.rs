//! A Hugging Face `save_to_disk` directory as a sample source: every row is a sample,
//! in the order of the Arrow files `state.json` lists and of their rows. Files are read
//! as streams, one record batch at a time (bounded memory).
//!
//! The key is the value of the `__key__` column (another with `--key-column`), after
//! the file's [`KeyPrefix`] when one is asked for; without such a column it is the
//! row's index in the whole dataset, 0-based, as `{:09}` (`000000007`): stable, since
//! `state.json` fixes the files' order. Every other column is a field named after it
//! (lowercased), as for Parquet input ([`crate::arrow_values`]): binary and string
//! values are the field's bytes, lists and structs their JSON text, numbers and bools
//! their text; nulls are absent fields.

use std::io::{BufReader, Read};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_ipc::reader::StreamReader;
use arrow_schema::SchemaRef;
use shardsmith_manifest::Skipped;
use shardsmith_store::InputSource;

use super::dataset::{INFO, STATE};
use crate::arrow_values::{field_columns, value_bytes};
use crate::columns::Encoding;
use crate::content::Validation;
use crate::ipc_guard::Uncompressed;
use crate::keys::KeyPrefix;
use crate::sample::{
    FieldSpec, HeadError, Loaded, SampleListing, SampleReader, SampleSource, SampleSpec,
};
use crate::{Error, Result};

/// A data file's Arrow stream, refused at a compressed batch ([`Uncompressed`]).
type Stream = StreamReader<Uncompressed<BufReader<Box<dyn Read + Send>>>>;

/// The key column of a dataset when `--key-column` is left at its default.
pub const KEY_COLUMN: &str = "__key__";
/// The largest `state.json` read.
const MAX_STATE: u64 = 64 << 20;
/// A sample's origin: its file's index above these bits, its row in the file below.
const ROW_BITS: u32 = 40;
/// Most rows a record batch may hold beyond eight a byte of its buffers. Every column
/// `datasets` writes costs at least a bit a row (offsets, values or validity); rows
/// beyond that are rows of nothing (no column, or only `null` ones), which a damaged
/// message can claim by the trillion, each to be listed as a row left out.
const MAX_EMPTY_ROWS: usize = 4096;

fn bad(path: &str, reason: impl Into<String>) -> Error {
    Error::BadInput {
        path: path.to_string(),
        reason: reason.into(),
    }
}

/// The key column an hf dataset is read or written with: `__key__`, unless
/// `--key-column` names another than its default (`key`).
pub fn key_column(given: &str) -> &str {
    if given == "key" { KEY_COLUMN } else { given }
}

/// True when `source` is a `save_to_disk` directory: `state.json` listing data files
/// and `dataset_info.json` beside it (or the one file named is one of those two).
pub fn is_hf_input(source: &dyn InputSource, only: Option<&str>) -> bool {
    if only.is_some_and(|rel| rel != STATE && rel != INFO) {
        return false;
    }
    source.open(INFO).is_ok() && data_files(source).is_ok()
}

/// The files `state.json` lists, in order.
fn data_files(source: &dyn InputSource) -> Result<Vec<String>> {
    let shown = source.display(STATE);
    let mut text = Vec::new();
    source
        .open(STATE)
        .map_err(|e| Error::io("reading", &shown, e.into()))?
        .take(MAX_STATE)
        .read_to_end(&mut text)
        .map_err(|e| Error::io("reading", &shown, e))?;
    let state: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad(&shown, format!("is not JSON: {e}")))?;
    let files = state["_data_files"]
        .as_array()
        .ok_or_else(|| bad(&shown, "has no `_data_files` list"))?;
    files
        .iter()
        .map(|f| {
            f["filename"]
                .as_str()
                .filter(|name| !name.is_empty() && !name.contains("..") && !name.starts_with('/'))
                .map(str::to_string)
                .ok_or_else(|| {
                    bad(
                        &shown,
                        format!("lists a data file without a plain `filename`: {f}"),
                    )
                })
        })
        .collect()
}

/// The rows of a `save_to_disk` directory.
pub struct HfRows {
    source: Arc<dyn InputSource>,
    root: String,
    files: Vec<String>,
    /// The one file to list (`cat --shard`); keys stay those of the whole dataset.
    shard: Option<usize>,
    key_column: String,
    has_key: bool,
    columns: Vec<(Arc<str>, usize)>,
    encodings: std::collections::BTreeMap<String, Encoding>,
    key_prefix: KeyPrefix,
}

impl HfRows {
    /// The dataset at `source`'s root; `shard` names one of its files to read alone.
    pub fn open(
        source: Arc<dyn InputSource>,
        root: &str,
        shard: Option<&str>,
        key_column: &str,
    ) -> Result<Self> {
        let files = data_files(&*source)?;
        if files.is_empty() {
            return Err(Error::EmptyInput {
                root: root.to_string(),
                detail: ": its state.json lists no data file".into(),
            });
        }
        let shard = match shard {
            Some(rel) => Some(files.iter().position(|f| f == rel).ok_or_else(|| {
                bad(
                    &source.display(rel),
                    "is not a data file that state.json lists",
                )
            })?),
            None => None,
        };
        let mut schema: Option<SchemaRef> = None;
        for rel in &files {
            let this = open_stream(&*source, rel)?.schema();
            match &schema {
                Some(first) if first.fields() != this.fields() => {
                    return Err(bad(
                        &source.display(rel),
                        format!("has another schema than the first data file: {this} vs {first}"),
                    ));
                }
                Some(_) => {}
                None => schema = Some(this),
            }
        }
        let schema = schema.expect("at least one file");
        let key_column = self::key_column(key_column).to_string();
        let has_key = schema.fields().iter().any(|f| *f.name() == key_column);
        let (columns, encodings) =
            field_columns(&schema, &key_column).map_err(|e| bad(root, e.to_string()))?;
        Ok(Self {
            source,
            root: root.to_string(),
            files,
            shard,
            key_column,
            has_key,
            columns,
            encodings,
            key_prefix: KeyPrefix::None,
        })
    }

    /// Puts `prefix` before every key column value (`pack --key-prefix`); keys made of
    /// row numbers are unique already and stay as they are.
    pub fn with_key_prefix(mut self, prefix: KeyPrefix) -> Self {
        self.key_prefix = prefix;
        self
    }

    fn stream(&self, file: usize) -> Result<Stream> {
        open_stream(&*self.source, &self.files[file])
    }

    fn next_batch(&self, file: usize, stream: &mut Stream) -> Result<Option<RecordBatch>> {
        let unreadable = |e: &dyn std::fmt::Display| {
            bad(
                &self.source.display(&self.files[file]),
                format!("is not a readable Arrow stream: {e}"),
            )
        };
        // arrow-ipc panics on some damage (a buffer past its batch's body).
        let batch = crate::parquet::caught(|| stream.next().transpose())
            .map_err(|why| unreadable(&format!("the Arrow reader failed: {why}")))?
            .map_err(|e| unreadable(&e))?;
        if let Some(batch) = &batch {
            let (rows, bytes) = (batch.num_rows(), batch.get_array_memory_size());
            if rows > MAX_EMPTY_ROWS && rows / 8 > bytes {
                return Err(unreadable(&format!(
                    "a record batch claims {rows} rows but holds {bytes} bytes of values (no column has data for them)"
                )));
            }
        }
        Ok(batch)
    }

    fn place(origin: u64) -> (usize, u64) {
        (
            (origin >> ROW_BITS) as usize,
            origin & ((1 << ROW_BITS) - 1),
        )
    }
}

fn open_stream(source: &dyn InputSource, rel: &str) -> Result<Stream> {
    let full = source.display(rel);
    let input = source
        .open(rel)
        .map_err(|e| Error::io("reading", &full, e.into()))?;
    crate::parquet::caught(|| {
        StreamReader::try_new(
            Uncompressed::new(BufReader::with_capacity(1 << 20, input)),
            None,
        )
    })
    .map_err(|why| format!("the Arrow reader failed: {why}"))
    .and_then(|r| r.map_err(|e| e.to_string()))
    .map_err(|e| bad(&full, format!("is not an Arrow IPC stream: {e}")))
}

impl SampleSource for HfRows {
    fn describe(&self) -> String {
        self.root.clone()
    }

    fn samples(&self) -> Result<SampleListing> {
        let mut listing = SampleListing::default();
        let mut global = 0u64;
        let last = self.shard.unwrap_or(self.files.len() - 1);
        for (index, rel) in self.files.iter().enumerate().take(last + 1) {
            let mut stream = self.stream(index)?;
            let mut local = 0u64;
            let full = self.source.display(rel);
            let listed = self.shard.is_none_or(|s| s == index);
            while let Some(batch) = self.next_batch(index, &mut stream)? {
                if !listed {
                    global += batch.num_rows() as u64;
                    continue;
                }
                let key_index = self
                    .has_key
                    .then(|| batch.schema().index_of(&self.key_column).ok())
                    .flatten();
                let formatters: Vec<Option<ArrayFormatter<'_>>> = batch
                    .columns()
                    .iter()
                    .map(|a| ArrayFormatter::try_new(a.as_ref(), &FormatOptions::default()).ok())
                    .collect();
                for r in 0..batch.num_rows() {
                    let value = |i: usize| {
                        value_bytes(batch.column(i), r, formatters[i].as_ref()).map_err(|e| {
                            bad(
                                &full,
                                format!(
                                    "row {local}, column `{}`: {e}",
                                    batch.schema().field(i).name()
                                ),
                            )
                        })
                    };
                    let key = match key_index {
                        Some(k) => value(k)?.map(|b| String::from_utf8_lossy(&b).into_owned()),
                        None => Some(format!("{global:09}")),
                    };
                    let mut skip = |reason: String| {
                        listing.skipped.push(Skipped {
                            path: format!("{rel}#row={local}"),
                            reason,
                        })
                    };
                    match key {
                        None => skip(format!("the key column `{}` is null", self.key_column)),
                        Some(key) if key.is_empty() => skip("the key is empty".into()),
                        Some(key) => {
                            let key = match key_index {
                                Some(_) => self.key_prefix.apply(rel, &key),
                                None => key,
                            };
                            let mut fields = Vec::with_capacity(self.columns.len());
                            for (name, i) in &self.columns {
                                if let Some(v) = value(*i)? {
                                    let size = v.len() as u64;
                                    fields.push(FieldSpec {
                                        ext: name.clone(),
                                        source_ext: name.clone(),
                                        size,
                                        encoded: size,
                                    });
                                }
                            }
                            if fields.is_empty() {
                                skip("every field of the row is null".into());
                            } else {
                                listing.samples.push(SampleSpec {
                                    key,
                                    fields,
                                    origin: ((index as u64) << ROW_BITS) | local,
                                });
                            }
                        }
                    }
                    local += 1;
                    global += 1;
                }
            }
        }
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let (file, row) = Self::place(sample.origin);
        format!("{}#row={row}:{}", self.files[file], field.ext)
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        Some(self.files[Self::place(sample.origin).0].clone())
    }

    fn head(
        &self,
        _sample: &SampleSpec,
        field: &FieldSpec,
        _n: usize,
    ) -> Result<Vec<u8>, HeadError> {
        Err(HeadError::NoHeader {
            field: field.ext.to_string(),
        })
    }

    fn suggested_encodings(&self) -> std::collections::BTreeMap<String, Encoding> {
        self.encodings.clone()
    }

    fn shuffle_refusal(&self) -> Option<String> {
        Some("Hugging Face input is read as streams, in order; shuffle at read time instead".into())
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        _validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        Ok(Box::new(RowReader {
            source: self,
            samples,
            file: usize::MAX,
            stream: None,
            batch: None,
            position: 0,
            row: 0,
        }))
    }
}

/// Reads consecutive rows for one shard, each file streamed from its start once.
struct RowReader<'a> {
    source: &'a HfRows,
    samples: &'a [SampleSpec],
    file: usize,
    stream: Option<Stream>,
    batch: Option<RecordBatch>,
    /// Row within `batch`.
    position: usize,
    /// Row in the file of `batch[position]`.
    row: u64,
}

impl RowReader<'_> {
    fn seek(&mut self, file: usize, target: u64) -> Result<()> {
        if file != self.file || target < self.row {
            self.stream = Some(self.source.stream(file)?);
            self.file = file;
            self.batch = None;
            self.row = 0;
            self.position = 0;
        }
        loop {
            if let Some(batch) = &self.batch {
                let left = batch.num_rows() - self.position;
                if target < self.row + left as u64 {
                    self.position += (target - self.row) as usize;
                    self.row = target;
                    return Ok(());
                }
                self.row += left as u64;
            }
            let stream = self.stream.as_mut().expect("opened above");
            let next = self.source.next_batch(file, stream)?;
            self.batch = Some(next.ok_or_else(|| {
                bad(
                    &self.source.source.display(&self.source.files[file]),
                    "has fewer rows than when it was listed",
                )
            })?);
            self.position = 0;
        }
    }
}

impl SampleReader for RowReader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let sample = &self.samples[index];
        let (file, row) = HfRows::place(sample.origin);
        self.seek(file, row)?;
        let batch = self.batch.as_ref().expect("seek leaves a batch");
        buf.clear();
        let mut ranges = Vec::with_capacity(sample.fields.len());
        for field in &sample.fields {
            let column = self
                .source
                .columns
                .iter()
                .find(|(name, _)| *name == field.ext)
                .map(|c| c.1)
                .expect("field of a known column");
            let array = batch.column(column);
            let formatter = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default()).ok();
            let value = value_bytes(array, self.position, formatter.as_ref())
                .map_err(|e| bad(&self.source.field_path(sample, field), e.to_string()))?
                .unwrap_or_default();
            if value.len() as u64 != field.size {
                return Err(Error::InputChanged {
                    path: self.source.field_path(sample, field),
                    listed: field.size,
                    read: value.len() as u64,
                });
            }
            let start = buf.len();
            buf.extend_from_slice(&value);
            ranges.push((start, buf.len()));
        }
        Ok(Ok(Loaded::Memory(ranges)))
    }
}
