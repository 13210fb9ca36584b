//! Parquet input: one text column, one row per document, read as raw bytes with the
//! Parquet reader `pack` uses too (`shardsmith_shard::parquet`), page by page (bounded
//! memory whatever the row-group size). Resumes at any row.

use std::sync::Arc;

use shardsmith_shard::parquet::{ByteColumn, ColumnError, ParquetFile};
use shardsmith_store::RangeRead;

use super::batch::{Batch, Position, Record, RecordKind};
use crate::{Error, Result};

/// Rows decoded per call.
const ROWS: usize = 1024;

/// Reads one column of a Parquet file as documents.
pub struct ParquetReader {
    column: ByteColumn,
    display: String,
    row: u64,
}

impl ParquetReader {
    /// Opens `input` (shown as `display`), finds the top-level string column `field`
    /// and skips to row `start`.
    pub fn open(input: Arc<dyn RangeRead>, display: &str, field: &str, start: u64) -> Result<Self> {
        let bad = |reason: String| Error::BadFile {
            path: display.to_string(),
            reason,
        };
        let file = ParquetFile::open(input).map_err(|e| bad(e.predicate()))?;
        let column = file.byte_column(field, start).map_err(|e| match e {
            ColumnError::Missing(names) => bad(format!(
                "has no column `{field}` (columns: {}); choose it with --field",
                names.join(", ")
            )),
            ColumnError::NotBytes(kind) => {
                bad(format!("column `{field}` is not a string column ({kind})"))
            }
            ColumnError::Unreadable(e) if e.starts_with("has fewer rows") => {
                bad("is shorter than when it was first read".into())
            }
            ColumnError::Unreadable(e) => bad(format!("cannot be read: {e}")),
        })?;
        Ok(Self {
            column,
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
        let first = self.row;
        let mut row = self.row;
        let rows = self
            .column
            .next_values(ROWS, |value| {
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
        Ok(rows == 0)
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
