//! The one Parquet reader of shardsmith. It opens a file through the store (random
//! access: a local file or, later, ranged reads of an object), refuses a malformed
//! footer before the parquet crate sees it ([`StrictFile`]), turns the crate's panics on
//! malformed data into errors ([`guarded`]), and reads rows as Arrow record batches from
//! any row on, for all columns or some. `pack` reads every column of every row
//! ([`super::input`]); `tokenize` reads one text column as raw bytes, resuming at any
//! row ([`super::column`]).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::Length;
use shardsmith_store::RangeRead;

use super::guard::guarded;
use super::strict::StrictFile;

/// An open Parquet file: its footer read once, rows read on demand.
pub struct ParquetFile {
    file: StrictFile,
    metadata: ArrowReaderMetadata,
}

/// Rows of a [`ParquetFile`], batch by batch.
pub struct Rows {
    reader: ParquetRecordBatchReader,
}

impl Rows {
    /// The next batch, `Ok(None)` at the end; an error says why the data cannot be read.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, String> {
        guarded(|| self.reader.next().transpose().map_err(|e| e.to_string()))
    }
}

/// Refuses a footer whose column chunks do not lie inside the file: the parquet crate
/// trusts these offsets and lengths (a negative one panics deep in its page reader, a
/// huge one sizes a read), so they are checked once here, before any page is read.
fn chunks_within(metadata: &ParquetMetaData, file_len: u64) -> Result<(), String> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, chunk) in group.columns().iter().enumerate() {
            let start = match chunk.dictionary_page_offset() {
                Some(dictionary) => dictionary.min(chunk.data_page_offset()),
                None => chunk.data_page_offset(),
            };
            let len = chunk.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(len).ok())
                .and_then(|(start, len)| start.checked_add(len));
            if end.is_none_or(|end| end > file_len) {
                return Err(format!(
                    "the footer puts row group {g}, column {c} ({}) at bytes {start}..+{len}, \
                     outside the file of {file_len} bytes",
                    chunk.column_path()
                ));
            }
        }
    }
    Ok(())
}

impl ParquetFile {
    /// Reads the footer of `input`. The error says why it is not a readable Parquet file.
    pub fn open(input: Arc<dyn RangeRead>) -> Result<Self, String> {
        guarded(|| {
            let file = StrictFile::new(input).map_err(|e| e.to_string())?;
            let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                .map_err(|e| e.to_string())?;
            chunks_within(metadata.metadata(), file.len())?;
            Ok(Self { file, metadata })
        })
    }

    /// The file's metadata (its footer).
    pub fn metadata(&self) -> &ParquetMetaData {
        self.metadata.metadata()
    }

    /// The file, read strictly (for the readers of other modules).
    pub(super) fn strict(&self) -> &StrictFile {
        &self.file
    }

    /// The Arrow schema of the rows.
    pub fn schema(&self) -> &SchemaRef {
        self.metadata.schema()
    }

    /// Rows in the file, as its footer says.
    pub fn num_rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The rows from row `from` on (0-based), `batch_rows` at a time, with the top-level
    /// `columns` (all when `None`). Whole row groups before `from` are not read.
    pub fn rows(
        &self,
        columns: Option<&[usize]>,
        from: u64,
        batch_rows: usize,
    ) -> Result<Rows, String> {
        let total = self.num_rows();
        if from > total {
            return Err(format!("has {total} rows, fewer than {from}"));
        }
        let groups = self.metadata.metadata().row_groups();
        let (mut first, mut before) = (0, 0u64);
        while first < groups.len() {
            let rows = groups[first].num_rows().max(0) as u64;
            if before + rows > from {
                break;
            }
            before += rows;
            first += 1;
        }
        guarded(|| {
            let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
                self.file.clone(),
                self.metadata.clone(),
            )
            .with_row_groups((first..groups.len()).collect())
            .with_offset((from - before) as usize)
            .with_batch_size(batch_rows);
            if let Some(columns) = columns {
                let mask =
                    ProjectionMask::roots(self.metadata.parquet_schema(), columns.iter().copied());
                builder = builder.with_projection(mask);
            }
            let reader = builder.build().map_err(|e| e.to_string())?;
            Ok(Rows { reader })
        })
    }
}
