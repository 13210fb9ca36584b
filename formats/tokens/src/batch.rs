//! Records as the reader hands them to the workers: their bytes, how to read them, and
//! where each starts, so a run can restart exactly where a shard ended.

use serde::{Deserialize, Serialize};

/// Where a record starts: the input file (index into the listing), the byte offset in
/// its decompressed content (JSONL) or the row (Parquet), and its 1-based line or row
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    /// Index of the input file.
    pub file: usize,
    /// Decompressed byte offset (JSONL), row index (Parquet), 0 (text).
    pub offset: u64,
    /// 1-based line (JSONL) or row (Parquet) number; 1 for a text file.
    pub line: u64,
}

impl Default for Position {
    /// The start of the first input.
    fn default() -> Self {
        Self {
            file: 0,
            offset: 0,
            line: 1,
        }
    }
}

/// How to read a record's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A JSON line; the text is under the field.
    Json,
    /// The document's UTF-8 text (Parquet value, text file).
    Text,
    /// Unusable, with the reason (a Parquet null, a non-UTF-8 text file).
    Bad(String),
}

/// A record of a batch.
#[derive(Clone, Debug)]
pub struct Record {
    /// Where it starts.
    pub pos: Position,
    /// Its bytes in the batch's data.
    pub range: std::ops::Range<usize>,
    /// How to read them.
    pub kind: RecordKind,
}

/// Records read in order, with their bytes.
#[derive(Debug, Default)]
pub struct Batch {
    /// The records' bytes.
    pub data: Vec<u8>,
    /// The records.
    pub records: Vec<Record>,
    /// Input bytes (as stored, compressed or not) consumed for this batch.
    pub input_bytes: u64,
}
