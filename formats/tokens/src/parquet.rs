//! Parquet input: one text column, one row per document, read with the Parquet reader
//! `pack` uses too (`shardsmith_shard::parquet::ParquetFile`), a batch of rows at a time
//! (bounded memory whatever the row-group size). Resumes at any row.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use shardsmith_shard::parquet::{ParquetFile, Rows};
use shardsmith_store::RangeRead;

use super::input::{Batch, Position, Record, RecordKind};
use crate::{Error, Result};

/// Rows decoded per call.
const ROWS: usize = 1024;

/// Reads one column of a Parquet file as documents.
pub struct ParquetReader {
    rows: Rows,
    display: String,
    row: u64,
}

impl ParquetReader {
    /// Opens `input` (shown as `display`), finds the top-level string column `field`
    /// and skips to row `start`.
    pub fn open(input: Arc<dyn RangeRead>, display: &str, field: &str, start: u64) -> Result<Self> {
        let bad = |reason: String| Error::BadRecord {
            path: display.to_string(),
            line: 0,
            reason,
        };
        let file = ParquetFile::open(input)
            .map_err(|e| bad(format!("is not a readable Parquet file: {e}")))?;
        let schema = file.schema().clone();
        let index = schema.index_of(field).map_err(|_| {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            bad(format!(
                "has no column `{field}` (columns: {}); choose it with --field",
                names.join(", ")
            ))
        })?;
        let data_type = schema.field(index).data_type();
        if !matches!(
            data_type,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
        ) {
            return Err(bad(format!(
                "column `{field}` is not a string column ({data_type})"
            )));
        }
        if start > file.num_rows() {
            return Err(bad("is shorter than when it was first read".into()));
        }
        let file = file
            .strings_as_bytes(index)
            .map_err(|e| bad(format!("cannot be read: {e}")))?;
        let rows = file
            .rows(Some(&[index]), start, ROWS)
            .map_err(|e| bad(format!("cannot be read: {e}")))?;
        Ok(Self {
            rows,
            display: display.to_string(),
            row: start,
        })
    }

    /// The position of the next row.
    pub fn position(&self, file: usize) -> Position {
        Position {
            file,
            offset: self.row,
            line: self.row + 1,
        }
    }

    /// Appends up to [`ROWS`] rows to `batch`; returns true when the file is done.
    pub fn next_into(&mut self, file: usize, batch: &mut Batch) -> Result<bool> {
        let next = self.rows.next_batch().map_err(|e| Error::BadRecord {
            path: self.display.clone(),
            line: self.row + 1,
            reason: format!("cannot be read: {e}"),
        })?;
        let Some(rows) = next else {
            return Ok(true);
        };
        self.append(&rows, file, batch);
        Ok(false)
    }

    fn append(&mut self, rows: &RecordBatch, file: usize, batch: &mut Batch) {
        let column = rows.column(0);
        let value = |i: usize| -> Option<&[u8]> {
            if column.is_null(i) {
                return None;
            }
            Some(match column.data_type() {
                DataType::LargeBinary => column.as_binary::<i64>().value(i),
                DataType::BinaryView => column.as_binary_view().value(i),
                _ => column.as_binary::<i32>().value(i),
            })
        };
        for i in 0..rows.num_rows() {
            let pos = Position {
                file,
                offset: self.row,
                line: self.row + 1,
            };
            self.row += 1;
            let start = batch.data.len();
            let kind = match value(i) {
                None => RecordKind::Bad("the value is null".into()),
                Some(value) => {
                    batch.data.extend_from_slice(value);
                    match std::str::from_utf8(value) {
                        Ok(_) => RecordKind::Text,
                        Err(e) => RecordKind::Bad(format!(
                            "the value is not UTF-8 (invalid byte at offset {})",
                            e.valid_up_to()
                        )),
                    }
                }
            };
            batch.records.push(Record {
                pos,
                range: start..batch.data.len(),
                kind,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use shardsmith_store::LocalFile;

    use super::*;

    /// Found by fuzzing (`token_input`): a 589-byte file whose footer declares a schema
    /// list far longer than itself made parquet 58 reserve 7.6 GB before decoding an
    /// element (and abort); parquet 60 refuses the list.
    #[test]
    fn a_footer_list_longer_than_the_footer_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.parquet");
        std::fs::write(&path, include_bytes!("testdata/fuzz-schema-list.parquet")).unwrap();
        let err = ParquetReader::open(
            Arc::new(LocalFile::new(File::open(&path).unwrap()).unwrap()),
            "in.parquet",
            "text",
            0,
        )
        .err()
        .expect("the footer is refused");
        assert!(
            err.to_string().contains("is not a readable Parquet file"),
            "{err}"
        );
    }
}
