//! Parquet input: one text column, one row per document, read as raw bytes with the
//! Parquet reader `pack` uses too (`shardsmith_shard::parquet`), page by page (bounded
//! memory whatever the row-group size). The footer is read once ([`ParquetInput`]);
//! its row groups are read apart, by several threads at once, each from any row on.

use std::ops::Range;
use std::sync::Arc;

use shardsmith_shard::parquet::{ByteColumn, ColumnError, ParquetFile};
use shardsmith_store::RangeRead;

use super::batch::{Batch, Position, Record, RecordKind};
use crate::{Error, Result};

/// Rows decoded per call.
const ROWS: usize = 1024;

/// A Parquet file whose footer was read and whose text column was found.
pub struct ParquetInput {
    file: ParquetFile,
    display: String,
    field: String,
}

impl ParquetInput {
    /// Opens `input` (shown as `display`) and finds the top-level string column `field`.
    pub fn open(input: Arc<dyn RangeRead>, display: &str, field: &str) -> Result<Self> {
        let file = ParquetFile::open(input).map_err(|e| bad(display, e.predicate()))?;
        // From the last row: checks the column without reading a page.
        file.byte_column(field, file.num_rows())
            .map_err(|e| column_error(e, display, field))?;
        Ok(Self {
            file,
            display: display.to_string(),
            field: field.to_string(),
        })
    }

    /// The rows of each row group from row `from` on (the first one cut at `from`),
    /// leaving out empty groups.
    pub fn groups_from(&self, from: u64) -> Result<Vec<Range<u64>>> {
        if from > self.file.num_rows() {
            return Err(bad(
                &self.display,
                "is shorter than when it was first read".into(),
            ));
        }
        let mut out = Vec::new();
        let mut row = 0u64;
        for group in self.file.metadata().row_groups() {
            let end = row.saturating_add(group.num_rows().max(0) as u64);
            if end > from.max(row) {
                out.push(from.max(row)..end);
            }
            row = end;
        }
        Ok(out)
    }

    /// A reader of the rows `rows` (within one row group, or to the end of the file).
    pub fn reader(&self, rows: Range<u64>) -> Result<ParquetReader> {
        let column = self
            .file
            .byte_column(&self.field, rows.start)
            .map_err(|e| column_error(e, &self.display, &self.field))?;
        Ok(ParquetReader {
            column,
            display: self.display.clone(),
            row: rows.start,
            end: rows.end,
        })
    }
}

fn bad(display: &str, reason: String) -> Error {
    Error::BadFile {
        path: display.to_string(),
        reason,
    }
}

fn column_error(e: ColumnError, display: &str, field: &str) -> Error {
    bad(
        display,
        match e {
            ColumnError::Missing(names) => format!(
                "has no column `{field}` (columns: {}); choose it with --field",
                names.join(", ")
            ),
            ColumnError::NotBytes(kind) => {
                format!("column `{field}` is not a string column ({kind})")
            }
            ColumnError::Unreadable(e) if e.starts_with("has fewer rows") => {
                "is shorter than when it was first read".into()
            }
            ColumnError::Unreadable(e) => format!("cannot be read: {e}"),
        },
    )
}

/// Reads rows of one column of a Parquet file as documents.
pub struct ParquetReader {
    column: ByteColumn,
    display: String,
    row: u64,
    /// The row it stops before.
    end: u64,
}

impl ParquetReader {
    /// Opens `input` (shown as `display`), finds the top-level string column `field`
    /// and skips to row `start`; reads to the end of the file.
    pub fn open(input: Arc<dyn RangeRead>, display: &str, field: &str, start: u64) -> Result<Self> {
        ParquetInput::open(input, display, field)?.reader(start..u64::MAX)
    }

    /// The position of the next row.
    pub fn position(&self, file: usize) -> Position {
        Position {
            file,
            offset: self.row,
            line: self.row + 1,
        }
    }

    /// Appends up to [`ROWS`] rows to `batch`; returns true when its rows are done.
    pub fn next_into(&mut self, file: usize, batch: &mut Batch) -> Result<bool> {
        let first = self.row;
        let mut row = self.row;
        let max = (self.end - self.row).min(ROWS as u64) as usize;
        if max == 0 {
            return Ok(true);
        }
        let rows = self
            .column
            .next_values(max, |value| {
                let pos = Position {
                    file,
                    offset: row,
                    line: row + 1,
                };
                row += 1;
                let start = batch.data.len();
                let kind = match value {
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
            })
            .map_err(|e| Error::BadRecord {
                path: self.display.clone(),
                line: first + 1,
                reason: format!("cannot be read: {e}"),
            })?;
        self.row = row;
        Ok(rows == 0 || self.row >= self.end)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use shardsmith_manifest::Classify;
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

    /// Found by fuzzing (`token_input`): a footer that puts the text column's chunk at
    /// byte -43 made the parquet crate assert in `byte_range` while `tokenize` opened the
    /// column, outside any guard, which ended the process. The footer is now refused
    /// with the row group, the column and the range.
    #[test]
    fn a_column_chunk_outside_the_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.parquet");
        let bytes = include_bytes!("testdata/fuzz-negative-chunk-start.parquet");
        std::fs::write(&path, bytes).unwrap();
        let err = ParquetReader::open(
            Arc::new(LocalFile::new(File::open(&path).unwrap()).unwrap()),
            "in.parquet",
            "text",
            0,
        )
        .err()
        .expect("the footer is refused");
        assert_eq!(err.kind(), "bad_input");
        assert_eq!(
            err.to_string(),
            format!(
                "input `in.parquet`: is not a readable Parquet file: the footer puts row \
                 group 0, column 1 (\"text\") at bytes -43..+181, outside the file of {} bytes",
                bytes.len()
            )
        );
    }
}
