//! The one Parquet reader of shardsmith. It opens a file through the store (random
//! access: a local file or, later, ranged reads of an object), refuses a malformed
//! footer before the parquet crate sees it ([`StrictFile`]), turns the crate's panics on
//! malformed data into errors ([`guarded`]), and reads rows as Arrow record batches from
//! any row on, for all columns or some. `pack` reads every column of every row
//! ([`super::input`]); `tokenize` reads one text column as raw bytes, resuming at any
//! row ([`super::column`]).

use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::file::metadata::{FileMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::Length;
use shardsmith_store::RangeRead;

use super::error::{DecodeError, ReadError};
use super::group::{self, Group};
use super::guard::guarded;
use super::strict::{Encryption, StrictFile};

/// An open Parquet file: its footer read once, rows read on demand. Cloning shares it.
#[derive(Clone)]
pub struct ParquetFile {
    file: StrictFile,
    metadata: ArrowReaderMetadata,
    /// Written by parquet-mr before 1.2.9 (chunk sizes that leave out the dictionary
    /// page header: pyarrow reads up to 100 bytes more).
    old_parquet_mr: bool,
    /// Each row group prepared for reading every column, once (listing and reading
    /// the same rows walk its pages once).
    prepared: Arc<Vec<OnceLock<Result<Group, ReadError>>>>,
}

/// Rows of a [`ParquetFile`], batch by batch, row group by row group.
pub struct Rows {
    file: ParquetFile,
    /// Leaf columns read, and the mask that selects them.
    leaves: Vec<usize>,
    mask: Option<ProjectionMask>,
    /// The next row group to read, and rows to skip at its start.
    next_group: usize,
    skip: usize,
    batch_rows: usize,
    reader: Option<ParquetRecordBatchReader>,
}

impl Rows {
    /// The next batch, `Ok(None)` at the end; an error says why the data cannot be read.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, ReadError> {
        loop {
            if let Some(reader) = &mut self.reader {
                match guarded(|| reader.next().transpose().map_err(DecodeError::from))? {
                    Some(batch) => return Ok(Some(batch)),
                    None => self.reader = None,
                }
            }
            if self.next_group >= self.file.metadata().num_row_groups() {
                return Ok(None);
            }
            let index = self.next_group;
            self.next_group += 1;
            let skip = std::mem::take(&mut self.skip);
            self.reader = Some(self.file.group_reader(
                index,
                &self.leaves,
                self.mask.clone(),
                skip,
                self.batch_rows,
            )?);
        }
    }
}

/// Refuses a footer whose column chunks do not lie inside the file: the parquet crate
/// trusts these offsets and lengths (a negative one panics deep in its page reader, a
/// huge one sizes a read), so they are checked once here, before any page is read.
fn chunks_within(metadata: &ParquetMetaData, file_len: u64) -> Result<(), DecodeError> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, chunk) in group.columns().iter().enumerate() {
            let start = group::chunk_start(chunk);
            let len = chunk.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(len).ok())
                .and_then(|(start, len)| start.checked_add(len));
            if end.is_none_or(|end| end > file_len) {
                return Err(DecodeError::ChunkOutside {
                    group: g,
                    column: c,
                    path: chunk.column_path().to_string(),
                    start,
                    len,
                    file_len,
                });
            }
        }
    }
    Ok(())
}

impl ParquetFile {
    /// Reads the footer of `input`. The error says why it is not a readable Parquet file
    /// ([`ReadError::Encrypted`] for an encrypted one).
    pub fn open(input: Arc<dyn RangeRead>) -> Result<Self, ReadError> {
        let file = StrictFile::new(input).map_err(|e| ReadError::Damaged(e.to_string()))?;
        match file.encryption() {
            Encryption::None => {}
            Encryption::Footer => {
                return Err(ReadError::Encrypted(
                    "is an encrypted Parquet file (encrypted footer, `PARE`): shardsmith has no keys to read it".into(),
                ));
            }
            Encryption::Columns => {
                return Err(ReadError::Encrypted(
                    "is an encrypted Parquet file (plaintext footer, encrypted columns): shardsmith has no keys to read its pages".into(),
                ));
            }
        }
        guarded(|| {
            let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())?;
            chunks_within(metadata.metadata(), file.len())?;
            let old_parquet_mr =
                group::is_old_parquet_mr(metadata.metadata().file_metadata().created_by());
            let groups = metadata.metadata().num_row_groups();
            Ok(Self {
                file,
                metadata,
                old_parquet_mr,
                prepared: Arc::new((0..groups).map(|_| OnceLock::new()).collect()),
            })
        })
        .map_err(|e: DecodeError| ReadError::Damaged(e.to_string()))
    }

    /// The file's metadata (its footer, as written).
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

    /// Rows in the file: the sum of its row groups' counts, which readers read (the
    /// footer's own count may differ: some writers leave it 0).
    pub fn num_rows(&self) -> u64 {
        self.metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows().max(0) as u64)
            .fold(0, u64::saturating_add)
    }

    /// Leaf columns under the top-level `columns` (all when `None`).
    fn leaves(&self, columns: Option<&[usize]>) -> Vec<usize> {
        let schema = self.metadata.parquet_schema();
        (0..schema.num_columns())
            .filter(|&leaf| columns.is_none_or(|c| c.contains(&schema.get_column_root_idx(leaf))))
            .collect()
    }

    /// Row group `index` with the chunks of `leaves` read as pyarrow reads them, its
    /// memory checked ([`group::prepare`]).
    pub(super) fn prepare(&self, index: usize, leaves: &[usize]) -> Result<Group, ReadError> {
        let prepare = || {
            group::prepare(
                &self.file,
                self.metadata().row_group(index),
                index,
                leaves,
                self.old_parquet_mr,
            )
        };
        if leaves.len() == self.metadata.parquet_schema().num_columns() {
            self.prepared[index].get_or_init(prepare).clone()
        } else {
            prepare()
        }
    }

    /// Checks row group `index` for reading every column: what pyarrow would refuse, or
    /// what would cost more memory than shardsmith allows, without decoding a value.
    pub fn check_group(&self, index: usize) -> Result<(), ReadError> {
        self.prepare(index, &self.leaves(None)).map(drop)
    }

    /// A reader of row group `index` alone, from its row `skip` on.
    fn group_reader(
        &self,
        index: usize,
        leaves: &[usize],
        mask: Option<ProjectionMask>,
        skip: usize,
        batch_rows: usize,
    ) -> Result<ParquetRecordBatchReader, ReadError> {
        let Group {
            metadata: group,
            batch_rows: fit,
        } = self.prepare(index, leaves)?;
        let reader = guarded(|| {
            // The row group alone, in a footer that counts its rows: the parquet crate
            // reads no more rows than the footer's count, which some writers leave 0
            // (pyarrow reads the row groups' counts).
            let file = self.metadata().file_metadata();
            let footer = FileMetaData::new(
                file.version(),
                group.num_rows(),
                file.created_by().map(str::to_string),
                file.key_value_metadata().cloned(),
                file.schema_descr_ptr(),
                file.column_orders().cloned(),
            );
            let metadata = ParquetMetaData::new(footer, vec![group]);
            let options = ArrowReaderOptions::new();
            let metadata = ArrowReaderMetadata::try_new(Arc::new(metadata), options)?;
            let mut builder =
                ParquetRecordBatchReaderBuilder::new_with_metadata(self.file.clone(), metadata)
                    .with_row_groups(vec![0])
                    .with_offset(skip)
                    .with_batch_size(batch_rows.min(fit).max(1));
            if let Some(mask) = mask {
                builder = builder.with_projection(mask);
            }
            builder.build().map_err(DecodeError::from)
        })?;
        Ok(reader)
    }

    /// Reads row group `index` whole, every column, and returns how many rows it holds.
    pub fn group_rows(&self, index: usize) -> Result<u64, ReadError> {
        let leaves = self.leaves(None);
        let mut reader = self.group_reader(index, &leaves, None, 0, 1024)?;
        let mut rows = 0u64;
        while let Some(batch) = guarded(|| reader.next().transpose().map_err(DecodeError::from))? {
            rows += batch.num_rows() as u64;
        }
        Ok(rows)
    }

    /// One row group's normalized metadata (for the column readers of other modules).
    pub(super) fn group_metadata(
        &self,
        index: usize,
        leaf: usize,
    ) -> Result<RowGroupMetaData, ReadError> {
        self.prepare(index, &[leaf]).map(|g| g.metadata)
    }

    /// The rows from row `from` on (0-based), at most `batch_rows` at a time (fewer where
    /// rows are large), with the top-level `columns` (all when `None`). Whole row groups
    /// before `from` are not read.
    pub fn rows(
        &self,
        columns: Option<&[usize]>,
        from: u64,
        batch_rows: usize,
    ) -> Result<Rows, ReadError> {
        let total = self.num_rows();
        if from > total {
            return Err(ReadError::Damaged(format!(
                "has {total} rows, fewer than {from}"
            )));
        }
        let groups = self.metadata().row_groups();
        let (mut first, mut before) = (0, 0u64);
        while first < groups.len() {
            let rows = groups[first].num_rows().max(0) as u64;
            if before + rows > from {
                break;
            }
            before += rows;
            first += 1;
        }
        let mask = columns
            .map(|c| ProjectionMask::roots(self.metadata.parquet_schema(), c.iter().copied()));
        Ok(Rows {
            file: self.clone(),
            leaves: self.leaves(columns),
            mask,
            next_group: first,
            skip: (from - before) as usize,
            batch_rows,
            reader: None,
        })
    }
}
