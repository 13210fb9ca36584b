//! Parquet input: one string column, read page by page (bounded memory whatever the
//! row-group size), one row per document. Resumes at any row.

use std::fs::File;
use std::sync::Arc;

use parquet::basic::Type as PhysicalType;
use parquet::column::reader::ColumnReaderImpl;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::reader::{FilePageIterator, FileReader, SerializedFileReader};
use parquet::schema::types::ColumnDescPtr;

use super::input::{Batch, Position, Record, RecordKind};
use crate::{Error, Result};

/// Rows decoded per call.
const ROWS: usize = 1024;

/// Reads one column of a Parquet file as documents.
pub struct ParquetReader {
    pages: FilePageIterator,
    descr: ColumnDescPtr,
    column: Option<ColumnReaderImpl<ByteArrayType>>,
    display: String,
    row: u64,
    values: Vec<ByteArray>,
    levels: Vec<i16>,
}

impl ParquetReader {
    /// Opens `file` (shown as `display`), finds the top-level string column `field`
    /// and skips to row `start`.
    pub fn open(file: File, display: &str, field: &str, start: u64) -> Result<Self> {
        let bad = |reason: String| Error::BadRecord {
            path: display.to_string(),
            line: 0,
            reason,
        };
        let reader = shardsmith_shard::parquet::guarded(|| {
            let file =
                shardsmith_shard::parquet::StrictFile::new(file).map_err(|e| e.to_string())?;
            SerializedFileReader::new(file).map_err(|e| e.to_string())
        })
        .map_err(|e| bad(format!("is not a readable Parquet file: {e}")))?;
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let (index, descr) = schema
            .columns()
            .iter()
            .enumerate()
            .find(|(_, c)| c.path().parts() == [field.to_string()])
            .ok_or_else(|| {
                let names: Vec<String> =
                    schema.columns().iter().map(|c| c.path().string()).collect();
                bad(format!(
                    "has no column `{field}` (columns: {}); choose it with --field",
                    names.join(", ")
                ))
            })?;
        if descr.physical_type() != PhysicalType::BYTE_ARRAY || descr.max_rep_level() > 0 {
            return Err(bad(format!(
                "column `{field}` is not a string column ({:?})",
                descr.physical_type()
            )));
        }
        let descr = descr.clone();
        let groups: Vec<u64> = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows().max(0) as u64)
            .collect();
        let reader: Arc<dyn FileReader> = Arc::new(reader);
        let mut pages = FilePageIterator::new(index, reader)
            .map_err(|e| bad(format!("cannot be read: {e}")))?;
        let mut row = 0u64;
        let mut column = None;
        for rows in groups {
            if row.saturating_add(rows) > start {
                let page_reader = pages
                    .next()
                    .transpose()
                    .map_err(|e| bad(format!("cannot be read: {e}")))?;
                if let Some(page_reader) = page_reader {
                    let mut reader = ColumnReaderImpl::new(descr.clone(), page_reader);
                    let skip = (start - row) as usize;
                    let skipped = reader
                        .skip_records(skip)
                        .map_err(|e| bad(format!("cannot be read: {e}")))?;
                    if skipped != skip {
                        return Err(bad("is shorter than when it was first read".into()));
                    }
                    column = Some(reader);
                }
                row = start;
                break;
            }
            pages.next();
            row = row.saturating_add(rows);
        }
        if row < start {
            return Err(bad("is shorter than when it was first read".into()));
        }
        Ok(Self {
            pages,
            descr,
            column,
            display: display.to_string(),
            row,
            values: Vec::new(),
            levels: Vec::new(),
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
        let bad = |e: String| Error::BadRecord {
            path: self.display.clone(),
            line: self.row + 1,
            reason: format!("cannot be read: {e}"),
        };
        loop {
            if self.column.is_none() {
                match self.pages.next() {
                    None => return Ok(true),
                    Some(page_reader) => {
                        self.column = Some(ColumnReaderImpl::new(
                            self.descr.clone(),
                            page_reader.map_err(|e| bad(e.to_string()))?,
                        ));
                    }
                }
            }
            self.values.clear();
            self.levels.clear();
            let column = self.column.as_mut().expect("set above");
            let (levels, values) = (&mut self.levels, &mut self.values);
            let (rows, _, _) = shardsmith_shard::parquet::guarded(|| {
                column
                    .read_records(ROWS, Some(levels), None, values)
                    .map_err(|e| e.to_string())
            })
            .map_err(bad)?;
            if rows == 0 {
                self.column = None;
                continue;
            }
            let max_def = self.descr.max_def_level();
            let mut values = self.values.iter();
            for i in 0..rows {
                let pos = Position {
                    file,
                    offset: self.row,
                    line: self.row + 1,
                };
                self.row += 1;
                let start = batch.data.len();
                let present = max_def == 0 || self.levels.get(i) == Some(&max_def);
                let kind = match present.then(|| values.next()).flatten() {
                    None => RecordKind::Bad("the value is null".into()),
                    Some(value) => {
                        batch.data.extend_from_slice(value.data());
                        match std::str::from_utf8(value.data()) {
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
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (`token_input`): a 589-byte file whose footer declares a schema
    /// list far longer than itself made parquet 58 reserve 7.6 GB before decoding an
    /// element (and abort); parquet 60 refuses the list.
    #[test]
    fn a_footer_list_longer_than_the_footer_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.parquet");
        std::fs::write(&path, include_bytes!("testdata/fuzz-schema-list.parquet")).unwrap();
        let err = ParquetReader::open(File::open(&path).unwrap(), "in.parquet", "text", 0)
            .err()
            .expect("the footer is refused");
        assert!(
            err.to_string().contains("is not a readable Parquet file"),
            "{err}"
        );
    }
}
