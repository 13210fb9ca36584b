//! Parquet files as a sample source: every row is a sample, in file and row order.
//!
//! The key is the value of the key column (`--key-column`, default `key`) when the
//! files have one (after the file's [`KeyPrefix`], when one is asked for), else
//! `PATH/ROW`: the file's path below the input without `.parquet`, and the row number
//! in that file (`train.0/000000007` for `train.0.parquet`). Every other column is a
//! field named after it (lowercased); binary and string values are the field's bytes,
//! nested values (lists, maps, structs) their JSON text ([`super::nested`]), other types
//! their text (`3`, `0.5`, `2024-01-01T00:00:00`); nulls are absent fields. Rows with a
//! null or empty key are left out with the reason; a key used twice is refused by the
//! pack ([`crate::keys::check_unique`]), never merged.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use shardsmith_manifest::{MANIFEST_FILE, SUMS_FILE, Skipped, TEMP_PREFIX};
use shardsmith_store::InputSource;

use super::error::ReadError;
use super::rows::{ParquetFile, Rows};
use crate::arrow_values::{field_columns, value_bytes};
use crate::columns::Encoding;
use crate::content::Validation;
use crate::keys::KeyPrefix;
use crate::sample::{
    FieldSpec, HeadError, Loaded, SampleListing, SampleReader, SampleSource, SampleSpec,
};
use crate::{Error, Result};

struct PartFile {
    rel: String,
    /// The file as shown in messages.
    full: String,
    file: ParquetFile,
    first_row: u64,
}

/// The rows of one or more Parquet files.
pub struct ParquetRows {
    root: String,
    files: Vec<PartFile>,
    key_column: String,
    has_key: bool,
    /// Columns in field order: (field name, column index in the files' schema).
    columns: Vec<(Arc<str>, usize)>,
    /// Encodings matching the column types, for formats with typed columns.
    encodings: std::collections::BTreeMap<String, Encoding>,
    /// What goes before a key column's value.
    key_prefix: KeyPrefix,
}

fn bad(path: &str, reason: String) -> Error {
    Error::BadInput {
        path: path.to_string(),
        reason,
    }
}

fn pq_err(path: &str, e: ReadError) -> Error {
    bad(path, e.predicate())
}

/// True when an input holds Parquet rows rather than raw files: the one file it names
/// ends in `.parquet`, or it holds `.parquet` files and nothing else besides hidden files
/// (and files in hidden directories) and the manifest files shardsmith writes beside shards (a `pack --format parquet`
/// output is itself a valid Parquet input). Decided at the first other file.
pub fn is_parquet_input(source: &dyn InputSource, only: Option<&str>) -> bool {
    if let Some(rel) = only {
        return rel.ends_with(".parquet");
    }
    source.every_file(&|rel| {
        let base = rel.rsplit('/').next().unwrap_or(rel);
        let hidden = rel.split('/').any(|part| part.starts_with('.'));
        if hidden || base == MANIFEST_FILE || base == SUMS_FILE {
            None
        } else {
            Some(base.ends_with(".parquet"))
        }
    })
}

/// The files of a Parquet input: the one `only` names, or every `.parquet` file the
/// source lists (shardsmith's own files beside them skipped; any other file refused).
fn parquet_files(source: &dyn InputSource, only: Option<&str>) -> Result<Vec<String>> {
    Ok(match only {
        Some(rel) => vec![rel.to_string()],
        None => {
            let listing = source.list()?;
            if let Some(skip) = listing.skipped.first() {
                return Err(bad(
                    &source.display(&skip.path),
                    format!("cannot be listed: {}", skip.reason),
                ));
            }
            let mut out = Vec::new();
            for file in listing.files {
                // Shardsmith's own files beside the shards (a Parquet output is a
                // valid input), and any other tool's manifest or sums.
                let base = file.rel.rsplit('/').next().unwrap_or(&file.rel);
                if base.starts_with(TEMP_PREFIX) || base == MANIFEST_FILE || base == SUMS_FILE {
                    continue;
                }
                if !file.rel.ends_with(".parquet") {
                    return Err(bad(
                    &source.display(&file.rel),
                    "is in the Parquet input but is not a .parquet file; use --input-format files to pack a tree of raw files".into(),
                ));
                }
                out.push(file.rel);
            }
            out
        }
    })
}

/// Opens every file of the input (at least one) and checks they share the first one's
/// schema; the files, numbered by their first row, and that schema.
fn open_files(
    source: &dyn InputSource,
    rels: Vec<String>,
) -> Result<(Vec<PartFile>, arrow_schema::SchemaRef)> {
    let mut files = Vec::new();
    let mut schema: Option<arrow_schema::SchemaRef> = None;
    let mut rows = 0u64;
    for rel in rels {
        let full = source.display(&rel);
        let input = source
            .open_ranged(&rel)
            .map_err(|e| Error::io("reading", &full, e.into()))?;
        let file = ParquetFile::open(input).map_err(|e| pq_err(&full, e))?;
        let this = file.schema().clone();
        match &schema {
            None => schema = Some(this),
            Some(first) if first.fields() != this.fields() => {
                return Err(bad(
                    &full,
                    format!("has another schema than the first Parquet file: {this} vs {first}"),
                ));
            }
            _ => {}
        }
        let count = file.num_rows();
        files.push(PartFile {
            rel,
            full,
            file,
            first_row: rows,
        });
        rows += count;
    }
    let schema = schema.expect("at least one file");
    Ok((files, schema))
}

impl ParquetRows {
    /// The Parquet files at `root` (one file, or every `.parquet` file below a
    /// directory, in path order). All must share one schema.
    ///
    /// `source` lists and reads the files; `root` is how the input was named (for
    /// messages); `only` names the one file to read when the input named a file (it
    /// need not end in `.parquet`).
    pub fn open(
        source: Arc<dyn InputSource>,
        root: &str,
        only: Option<&str>,
        key_column: &str,
    ) -> Result<Self> {
        let rels = parquet_files(&*source, only)?;
        if rels.is_empty() {
            return Err(Error::EmptyInput {
                root: root.to_string(),
                detail: ": it holds no .parquet file".into(),
            });
        }
        let (files, schema) = open_files(&*source, rels)?;
        let has_key = schema.fields().iter().any(|f| f.name() == key_column);
        let (columns, encodings) =
            field_columns(&schema, key_column).map_err(|e| bad(root, e.to_string()))?;
        Ok(Self {
            root: root.to_string(),
            files,
            key_column: key_column.to_string(),
            has_key,
            columns,
            encodings,
            key_prefix: KeyPrefix::None,
        })
    }

    /// Puts `prefix` before every key column value (`pack --key-prefix`); keys made of
    /// a file's path and a row number are unique already and stay as they are.
    pub fn with_key_prefix(mut self, prefix: KeyPrefix) -> Self {
        self.key_prefix = prefix;
        self
    }

    fn file_of(&self, row: u64) -> usize {
        self.files.partition_point(|f| f.first_row <= row) - 1
    }

    fn batches(&self, file: usize, offset: u64) -> Result<Rows> {
        let f = &self.files[file];
        f.file
            .rows(None, offset, 1024)
            .map_err(|e| pq_err(&f.full, e))
    }

    fn key_index(&self, batch: &RecordBatch) -> Option<usize> {
        self.has_key
            .then(|| batch.schema().index_of(&self.key_column).ok())
            .flatten()
    }
}

impl SampleSource for ParquetRows {
    fn describe(&self) -> String {
        self.root.clone()
    }

    fn samples(&self) -> Result<SampleListing> {
        let mut listing = SampleListing::default();
        for (index, file) in self.files.iter().enumerate() {
            let mut row = file.first_row;
            let mut batches = self.batches(index, 0)?;
            let generated = KeyPrefix::Path.of(&file.rel);
            while let Some(batch) = batches.next_batch().map_err(|e| pq_err(&file.full, e))? {
                let key_index = self.key_index(&batch);
                let formatters: Vec<Option<ArrayFormatter<'_>>> = batch
                    .columns()
                    .iter()
                    .map(|a| ArrayFormatter::try_new(a.as_ref(), &FormatOptions::default()).ok())
                    .collect();
                for r in 0..batch.num_rows() {
                    let local = row - file.first_row;
                    let value = |i: usize| {
                        value_bytes(batch.column(i), r, formatters[i].as_ref()).map_err(|e| {
                            bad(
                                &file.full,
                                format!(
                                    "row {local}, column `{}`: {e}",
                                    batch.schema().field(i).name()
                                ),
                            )
                        })
                    };
                    let key = match key_index {
                        Some(k) => value(k)?.map(|b| String::from_utf8_lossy(&b).into_owned()),
                        None => Some(format!("{generated}{local:09}")),
                    };
                    let skip = |listing: &mut SampleListing, reason: String| {
                        listing.skipped.push(Skipped {
                            path: format!("{}#row={local}", file.rel),
                            reason,
                        })
                    };
                    match key {
                        None => skip(
                            &mut listing,
                            format!("the key column `{}` is null", self.key_column),
                        ),
                        Some(key) if key.is_empty() => {
                            skip(&mut listing, "the key is empty".into())
                        }
                        Some(key) => {
                            let key = match key_index {
                                Some(_) => self.key_prefix.apply(&file.rel, &key),
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
                                skip(&mut listing, "every field of the row is null".into());
                            } else {
                                listing.samples.push(SampleSpec {
                                    key,
                                    fields,
                                    origin: row,
                                });
                            }
                        }
                    }
                    row += 1;
                }
            }
        }
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let file = &self.files[self.file_of(sample.origin)];
        format!(
            "{}#row={}:{}",
            file.rel,
            sample.origin - file.first_row,
            field.ext
        )
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        Some(self.files[self.file_of(sample.origin)].rel.clone())
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
        Some("Parquet input keeps its rows in order; shuffle at read time instead".into())
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
            batches: None,
            batch: None,
            position: 0,
            row: 0,
        }))
    }
}

/// Reads consecutive rows for one shard: each file opened once, at the shard's first row.
struct RowReader<'a> {
    source: &'a ParquetRows,
    samples: &'a [SampleSpec],
    file: usize,
    batches: Option<Rows>,
    batch: Option<RecordBatch>,
    /// Row within `batch`.
    position: usize,
    /// Global row number of `batch[position]`.
    row: u64,
}

impl RowReader<'_> {
    /// Positions on global row `target` (rows only move forward within a shard).
    fn seek(&mut self, target: u64) -> Result<()> {
        let file = self.source.file_of(target);
        if file != self.file || target < self.row {
            let offset = target - self.source.files[file].first_row;
            self.batches = Some(self.source.batches(file, offset)?);
            self.file = file;
            self.batch = None;
            self.row = target;
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
            let full = &self.source.files[self.file].full;
            let next = match self.batches.as_mut() {
                Some(batches) => batches.next_batch().map_err(|e| pq_err(full, e))?,
                None => None,
            };
            self.batch =
                Some(next.ok_or_else(|| bad(full, "has fewer rows than its footer says".into()))?);
            self.position = 0;
        }
    }
}

impl SampleReader for RowReader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let sample = &self.samples[index];
        self.seek(sample.origin)?;
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
