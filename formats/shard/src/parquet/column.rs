//! One column of a [`ParquetFile`] as raw bytes, value by value, from any row on: what
//! `tokenize` reads. Arrow would check a string column's UTF-8 for a whole batch at a
//! time; read raw, a value that is not UTF-8 reaches the caller, who leaves out that one
//! row. Pages are read as needed (bounded memory whatever the row-group size).

use std::sync::Arc;

use parquet::basic::Type as PhysicalType;
use parquet::column::page::PageReader;
use parquet::column::reader::ColumnReaderImpl;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::schema::types::ColumnDescPtr;

use super::error::DecodeError;
use super::guard::guarded;
use super::rows::ParquetFile;

/// A top-level byte-array (string or binary) column, read value by value.
pub struct ByteColumn {
    file: ParquetFile,
    /// The column's leaf index, and the next row group to read.
    leaf: usize,
    next_group: usize,
    descr: ColumnDescPtr,
    column: Option<ColumnReaderImpl<ByteArrayType>>,
    values: Vec<ByteArray>,
    levels: Vec<i16>,
}

/// Why a column cannot be read as bytes.
pub enum ColumnError {
    /// The file has no top-level column of that name; the names it has.
    Missing(Vec<String>),
    /// The column does not hold byte arrays (its physical type).
    NotBytes(String),
    /// The file cannot be read.
    Unreadable(String),
}

impl ParquetFile {
    /// The pages of row group `group`'s chunk of column `leaf`, read as pyarrow reads
    /// them (memory checked).
    fn column_pages(&self, group: usize, leaf: usize) -> Result<Box<dyn PageReader>, DecodeError> {
        let metadata = self.group_metadata(group, leaf)?;
        let rows = metadata.num_rows().max(0) as usize;
        let file = Arc::new(self.strict().clone());
        guarded(|| {
            SerializedPageReader::new(file, metadata.column(leaf), rows, None)
                .map(|r| Box::new(r) as Box<dyn PageReader>)
                .map_err(DecodeError::from)
        })
    }

    /// The top-level column `name` as raw bytes, from row `from` on (0-based).
    pub fn byte_column(&self, name: &str, from: u64) -> Result<ByteColumn, ColumnError> {
        let schema = self.metadata().file_metadata().schema_descr_ptr();
        let (index, descr) = schema
            .columns()
            .iter()
            .enumerate()
            .find(|(_, c)| c.path().parts() == [name.to_string()])
            .ok_or_else(|| {
                ColumnError::Missing(schema.columns().iter().map(|c| c.path().string()).collect())
            })?;
        if descr.physical_type() != PhysicalType::BYTE_ARRAY || descr.max_rep_level() > 0 {
            return Err(ColumnError::NotBytes(format!(
                "{:?}",
                descr.physical_type()
            )));
        }
        let descr = descr.clone();
        let unreadable = ColumnError::Unreadable;
        let mut row = 0u64;
        let mut column = None;
        let mut next_group = 0;
        for (g, group) in self.metadata().row_groups().iter().enumerate() {
            let rows = group.num_rows().max(0) as u64;
            next_group = g + 1;
            if row.saturating_add(rows) > from {
                let mut reader = ColumnReaderImpl::new(
                    descr.clone(),
                    self.column_pages(g, index)
                        .map_err(|e| unreadable(e.to_string()))?,
                );
                let skip = (from - row) as usize;
                let skipped = guarded(|| reader.skip_records(skip).map_err(DecodeError::from))
                    .map_err(|e| unreadable(e.to_string()))?;
                if skipped != skip {
                    return Err(unreadable(format!("has fewer rows than {from}")));
                }
                column = Some(reader);
                row = from;
                break;
            }
            row = row.saturating_add(rows);
        }
        if row < from {
            return Err(unreadable(format!("has fewer rows than {from}")));
        }
        Ok(ByteColumn {
            file: self.clone(),
            leaf: index,
            next_group,
            descr,
            column,
            values: Vec::new(),
            levels: Vec::new(),
        })
    }
}

impl ByteColumn {
    /// Calls `each` with up to `max` next values in row order (`None` for a null) and
    /// returns how many; 0 at the end of the column.
    pub fn next_values(
        &mut self,
        max: usize,
        mut each: impl FnMut(Option<&[u8]>),
    ) -> Result<usize, DecodeError> {
        loop {
            if self.column.is_none() {
                if self.next_group >= self.file.metadata().num_row_groups() {
                    return Ok(0);
                }
                let pages = self.file.column_pages(self.next_group, self.leaf)?;
                self.next_group += 1;
                self.column = Some(ColumnReaderImpl::new(self.descr.clone(), pages));
            }
            self.values.clear();
            self.levels.clear();
            let column = self.column.as_mut().expect("set above");
            let (levels, values) = (&mut self.levels, &mut self.values);
            let (rows, _, _) = guarded(|| {
                column
                    .read_records(max, Some(levels), None, values)
                    .map_err(DecodeError::from)
            })?;
            if rows == 0 {
                self.column = None;
                continue;
            }
            let max_def = self.descr.max_def_level();
            let mut values = self.values.iter();
            for i in 0..rows {
                let present = max_def == 0 || self.levels.get(i) == Some(&max_def);
                each(
                    present
                        .then(|| values.next())
                        .flatten()
                        .map(ByteArray::data),
                );
            }
            return Ok(rows);
        }
    }
}
