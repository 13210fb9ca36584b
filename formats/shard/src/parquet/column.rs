//! One column of a [`ParquetFile`] as raw bytes, value by value, from any row on: what
//! `tokenize` reads. Arrow would check a string column's UTF-8 for a whole batch at a
//! time; read raw, a value that is not UTF-8 reaches the caller, who leaves out that one
//! row. Pages are read as needed (bounded memory whatever the row-group size).

use std::sync::Arc;

use parquet::basic::Type as PhysicalType;
use parquet::column::reader::ColumnReaderImpl;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::reader::{FilePageIterator, FileReader, SerializedFileReader};
use parquet::schema::types::ColumnDescPtr;

use super::guard::guarded;
use super::rows::ParquetFile;

/// A top-level byte-array (string or binary) column, read value by value.
pub struct ByteColumn {
    pages: FilePageIterator,
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
        let groups: Vec<u64> = self
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows().max(0) as u64)
            .collect();
        let unreadable = |e: String| ColumnError::Unreadable(e);
        let reader =
            guarded(|| SerializedFileReader::new(self.strict().clone()).map_err(|e| e.to_string()))
                .map_err(unreadable)?;
        let reader: Arc<dyn FileReader> = Arc::new(reader);
        let mut pages =
            FilePageIterator::new(index, reader).map_err(|e| unreadable(e.to_string()))?;
        let mut row = 0u64;
        let mut column = None;
        for rows in groups {
            if row.saturating_add(rows) > from {
                let page_reader = guarded(|| pages.next().transpose().map_err(|e| e.to_string()))
                    .map_err(unreadable)?;
                if let Some(page_reader) = page_reader {
                    let mut reader = ColumnReaderImpl::new(descr.clone(), page_reader);
                    let skip = (from - row) as usize;
                    let skipped = guarded(|| reader.skip_records(skip).map_err(|e| e.to_string()))
                        .map_err(unreadable)?;
                    if skipped != skip {
                        return Err(unreadable(format!("has fewer rows than {from}")));
                    }
                    column = Some(reader);
                }
                row = from;
                break;
            }
            guarded(|| pages.next().transpose().map_err(|e| e.to_string())).map_err(unreadable)?;
            row = row.saturating_add(rows);
        }
        if row < from {
            return Err(unreadable(format!("has fewer rows than {from}")));
        }
        Ok(ByteColumn {
            pages,
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
    ) -> Result<usize, String> {
        loop {
            if self.column.is_none() {
                let pages = &mut self.pages;
                match guarded(|| pages.next().transpose().map_err(|e| e.to_string()))? {
                    None => return Ok(0),
                    Some(page_reader) => {
                        self.column = Some(ColumnReaderImpl::new(self.descr.clone(), page_reader));
                    }
                }
            }
            self.values.clear();
            self.levels.clear();
            let column = self.column.as_mut().expect("set above");
            let (levels, values) = (&mut self.levels, &mut self.values);
            let (rows, _, _) = guarded(|| {
                column
                    .read_records(max, Some(levels), None, values)
                    .map_err(|e| e.to_string())
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
