//! One row group made ready to read: its column chunks as pyarrow reads them, and what
//! decoding them costs, checked before a page is decompressed.
//!
//! pyarrow's rules for where a chunk starts and ends (Arrow C++ `ComputeColumnChunkRange`
//! and its page reader) are applied to the footer's metadata before the parquet crate
//! reads it: a `dictionary_page_offset` that is 0 or not before the first data page is
//! no offset (writers that put the dictionary page first store 0 there), files of
//! parquet-mr before 1.2.9 get up to 100 bytes past their declared chunk size (those
//! writers left the dictionary page header out of it), and a chunk ends after the page
//! that completes its declared number of values ([`super::pages`]).
//!
//! Memory: the pages the decoder holds at once (each column's dictionary and largest
//! data page) may not exceed the decode limit ([`decode_limit`], 512 MiB unless the
//! program sets another), nor may one row's share of them, and rows are read in
//! batches small enough that a batch of the row group's largest rows stays near
//! [`BATCH_BUDGET`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parquet::basic::Type as PhysicalType;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, RowGroupMetaData};
use parquet::file::reader::Length;
use parquet::file::serialized_reader::SerializedPageReader;

use super::error::DecodeError;
use super::error::ReadError;
use super::guard::guarded;
use super::pages::{self, Dictionary};
use super::strict::StrictFile;

/// Most bytes of decompressed pages a row group's decoding holds at once, by default.
pub const DECODE_LIMIT: u64 = 512 << 20;

/// The environment variable through which the command line sets another limit.
pub const DECODE_LIMIT_VAR: &str = "SHARDSMITH_PARQUET_DECODE_LIMIT";

static LIMIT: AtomicU64 = AtomicU64::new(DECODE_LIMIT);

/// Sets the decode limit for the whole process (the command line's
/// [`DECODE_LIMIT_VAR`]).
pub fn set_decode_limit(bytes: u64) {
    LIMIT.store(bytes.max(1), Ordering::Relaxed);
}

/// The decode limit in force.
pub fn decode_limit() -> u64 {
    LIMIT.load(Ordering::Relaxed)
}

/// How a message says the limit and how to raise it.
fn over_limit() -> String {
    format!(
        "more than the {} bytes shardsmith decodes at a time (raise it with {DECODE_LIMIT_VAR}=SIZE, e.g. 2GiB)",
        decode_limit()
    )
}

/// Bytes of decoded values a batch of rows aims at.
const BATCH_BUDGET: u64 = 64 << 20;

/// pyarrow's padding of chunks written by parquet-mr before 1.2.9 (`kMaxDictHeaderSize`).
const OLD_PARQUET_MR_PADDING: u64 = 100;

/// A row group ready to read.
#[derive(Clone)]
pub(super) struct Group {
    /// The footer's metadata with the chunks read as pyarrow reads them.
    pub metadata: RowGroupMetaData,
    /// Rows per batch.
    pub batch_rows: usize,
}

/// True when `created_by` names parquet-mr older than 1.2.9 (Arrow C++
/// `ApplicationVersion`: the application, `version`, then `MAJOR.MINOR.PATCH`).
pub(super) fn is_old_parquet_mr(created_by: Option<&str>) -> bool {
    let Some(text) = created_by else {
        return false;
    };
    let Some((app, rest)) = text.split_once("version") else {
        return false;
    };
    if app.trim() != "parquet-mr" {
        return false;
    }
    let mut parts = rest.trim().split(['.', ' ', '-', '+', '(']).map(|p| {
        p.bytes().take_while(u8::is_ascii_digit).fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        })
    });
    let version = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    version < (1, 2, 9)
}

/// The chunk's first byte as pyarrow finds it: the dictionary page offset only when it
/// is positive and before the first data page.
pub(super) fn chunk_start(chunk: &ColumnChunkMetaData) -> i64 {
    let data = chunk.data_page_offset();
    match chunk.dictionary_page_offset() {
        Some(d) if d > 0 && d < data => d,
        _ => data,
    }
}

/// The largest entry of a dictionary page, read (decompressed) through the parquet
/// crate: a byte-array dictionary is PLAIN-encoded, each entry after its `u32` length.
fn largest_entry(
    file: &StrictFile,
    chunk: &ColumnChunkMetaData,
    dictionary: Dictionary,
    rows: usize,
) -> Result<u64, DecodeError> {
    let descr = chunk.column_descr();
    match descr.physical_type() {
        PhysicalType::BYTE_ARRAY => {}
        PhysicalType::FIXED_LEN_BYTE_ARRAY => return Ok(descr.type_length().max(0) as u64),
        _ => return Ok(12),
    }
    // The page's bytes alone (read once, exactly), as a chunk that starts at 0.
    let bytes = file
        .read_upto(dictionary.offset, dictionary.len as usize)
        .map_err(DecodeError::Dictionary)?;
    let only = chunk
        .clone()
        .into_builder()
        .set_dictionary_page_offset(Some(0))
        .set_data_page_offset(0)
        .set_total_compressed_size(bytes.len() as i64)
        .build()?;
    let page = guarded(|| {
        let bytes = Arc::new(bytes::Bytes::from(bytes));
        let mut reader = SerializedPageReader::new(bytes, &only, rows, None)?;
        reader.get_next_page().map_err(DecodeError::from)
    })?;
    let Some(Page::DictionaryPage { buf, .. }) = page else {
        return Err(DecodeError::NotDictionary);
    };
    let (mut at, mut largest) = (0usize, 0u64);
    while at + 4 <= buf.len() {
        let len = u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
        largest = largest.max(len as u64);
        at = at.saturating_add(4).saturating_add(len);
    }
    Ok(largest)
}

/// Row group `index` of a file, its columns `leaves` (leaf column indices) to be read.
pub(super) fn prepare(
    file: &StrictFile,
    group: &RowGroupMetaData,
    index: usize,
    leaves: &[usize],
    old_parquet_mr: bool,
) -> Result<Group, ReadError> {
    let rows = group.num_rows().max(0) as u64;
    let limit = decode_limit();
    let mut metadata = group.clone();
    let (mut in_flight, mut row_bytes) = (0u64, 0u64);
    let mut largest: Option<(u64, String)> = None;
    for &leaf in leaves {
        let chunk = &group.columns()[leaf];
        let path = chunk.column_path().string();
        let damaged =
            |e: String| ReadError::Damaged(format!("row group {index}, column `{path}`: {e}"));
        let start = chunk_start(chunk);
        let len = chunk.compressed_size();
        let (Ok(start), Ok(len)) = (u64::try_from(start), u64::try_from(len)) else {
            return Err(damaged(format!(
                "the footer puts the column chunk at byte {start}, {len} bytes long"
            )));
        };
        let mut chunk_end = start.saturating_add(len).min(file.len());
        if old_parquet_mr {
            chunk_end += OLD_PARQUET_MR_PADDING.min(file.len() - chunk_end);
        }
        let walked = pages::walk(file, start, chunk_end, chunk.num_values())
            .map_err(|e| damaged(e.to_string()))?;
        let dictionary = walked.dictionary.map_or(0, |d| d.uncompressed);
        let needs = dictionary.saturating_add(walked.max_page);
        in_flight = in_flight.saturating_add(needs);
        if largest.as_ref().is_none_or(|(n, _)| needs > *n) {
            largest = Some((needs, path.clone()));
        }
        if in_flight > limit {
            let (n, column) = largest.expect("set above");
            return Err(ReadError::TooLarge(format!(
                "row group {index} needs {in_flight} bytes of decompressed pages at once \
                 (column `{column}`: {n} bytes), {}",
                over_limit()
            )));
        }
        // What one row of this column can decode to.
        let entry = match walked.dictionary {
            Some(d) => {
                largest_entry(file, chunk, d, rows as usize).map_err(|e| damaged(e.to_string()))?
            }
            None => 0,
        };
        let values = chunk.num_values().max(0) as u64;
        let per_row = if chunk.column_descr().max_rep_level() > 0 {
            // A row holds any number of values: their mean, each as large as a value
            // may be (a dictionary entry, or its share of the pages). One row is
            // decoded whole, so a mean over the limit is refused.
            let plain = walked.max_page.saturating_mul(walked.pages) / rows.max(1);
            let referenced = (values / rows.max(1)).saturating_mul(entry);
            let per_row = plain.max(referenced);
            if per_row > limit {
                return Err(ReadError::TooLarge(format!(
                    "row group {index}, column `{path}`: a row decodes to about {per_row} bytes \
                     ({values} values in {rows} rows; dictionary entries up to {entry} bytes), {}",
                    over_limit()
                )));
            }
            per_row
        } else {
            // A value lies in one page, or is a dictionary entry (both within the pages
            // counted above); fewer rows than the smallest page holds span at most two
            // pages, which sizes the batches.
            let plain = walked.max_page.saturating_mul(2) / walked.min_page_values.max(1);
            plain.max(entry)
        };
        row_bytes = row_bytes.saturating_add(per_row);
        let fixed = chunk
            .clone()
            .into_builder()
            .set_dictionary_page_offset(walked.dictionary.map(|d| d.offset as i64))
            .set_total_compressed_size((walked.end - start) as i64)
            .build()
            .map_err(|e| damaged(e.to_string()))?;
        metadata.columns_mut()[leaf] = fixed;
    }
    let batch_rows = (BATCH_BUDGET / row_bytes.max(1)).clamp(1, 1 << 16) as usize;
    Ok(Group {
        metadata,
        batch_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_parquet_mr_is_told_as_arrow_cpp_tells_it() {
        for (created_by, old) in [
            ("parquet-mr version 1.2.8", true),
            ("parquet-mr version 1.2.8 (build abcd)", true),
            ("parquet-mr version 1.1.0", true),
            ("parquet-mr version 1.2.9", false),
            (
                "parquet-mr version 1.10.1 (build a89df8f9932b6ef6633d06069e50c9b7970bebd1)",
                false,
            ),
            ("parquet-cpp-arrow version 26.0.1", false),
            ("shardsmith 0.1.0", false),
        ] {
            assert_eq!(is_old_parquet_mr(Some(created_by)), old, "{created_by}");
        }
        assert!(!is_old_parquet_mr(None));
    }
}
