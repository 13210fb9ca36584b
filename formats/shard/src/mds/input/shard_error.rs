//! Why a shard of an MDS input, or one of its records, cannot be read: the text
//! completes "`shard` ...".

use std::io;

/// Why a shard's header or one of its records cannot be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum ShardError {
    /// Too short for the header the index implies.
    #[error("is {len} bytes, too short for the header of the {samples} samples the index lists")]
    Short {
        /// Bytes of the file.
        len: u64,
        /// Samples the index lists.
        samples: u64,
    },
    /// The header cannot be read.
    #[error("cannot be read: {0}")]
    Unreadable(io::Error),
    /// A sample count other than the index's.
    #[error("holds {count} samples (header at byte 0), the index lists {samples}")]
    Count {
        /// The header's count.
        count: u64,
        /// The index's.
        samples: u64,
    },
    /// An offset past the end of the file.
    #[error(
        "is truncated: sample {sample} {edge} at byte {offset} (offset at byte {at}), past the end of the file ({len} bytes)"
    )]
    Truncated {
        /// The sample.
        sample: usize,
        /// `starts` or `ends`.
        edge: &'static str,
        /// The offset.
        offset: u64,
        /// Where the offset is.
        at: usize,
        /// Bytes of the file.
        len: u64,
    },
    /// The first sample starting inside the header.
    #[error(
        "sample 0 starts at byte {offset} (offset at byte {at}), inside the {header}-byte header"
    )]
    InsideHeader {
        /// The offset.
        offset: u64,
        /// Where the offset is.
        at: usize,
        /// Bytes of the header.
        header: u64,
    },
    /// A sample ending before it starts.
    #[error(
        "sample {sample} ends at byte {offset} (offset at byte {at}), before it starts (byte {previous})"
    )]
    Backwards {
        /// The sample.
        sample: usize,
        /// Its end.
        offset: u64,
        /// Where the offset is.
        at: usize,
        /// Its start.
        previous: u64,
    },
    /// Bytes after the last sample.
    #[error(
        "has {extra} bytes after its last sample, which ends at byte {end} (offset at byte {at})"
    )]
    Trailing {
        /// Bytes after it.
        extra: u64,
        /// Where the last sample ends.
        end: u64,
        /// Where that offset is.
        at: u64,
    },
    /// A record's offsets cannot be read.
    #[error("cannot read the offsets at byte {at}: {source}")]
    Offsets {
        /// Where they are.
        at: u64,
        /// The read error.
        source: io::Error,
    },
    /// A record outside the file.
    #[error(
        "sample {local} spans bytes {start}..{end} (offsets at byte {at}), outside the file ({len} bytes)"
    )]
    Outside {
        /// The sample within the shard.
        local: u64,
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
        /// Where the offsets are.
        at: u64,
        /// Bytes of the file.
        len: u64,
    },
    /// A record that cannot be read.
    #[error("sample {local} (bytes {start}..{end}): {error}")]
    Sample {
        /// The sample within the shard.
        local: u64,
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
        /// What is wrong with it.
        error: RecordError,
    },
}

/// Why one record cannot be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum RecordError {
    /// Its bytes cannot be read.
    #[error("cannot be read: {0}")]
    Unreadable(io::Error),
    /// Shorter than its header of column sizes.
    #[error("is {len} bytes, shorter than its {head}-byte header of column sizes")]
    ShortHeader {
        /// Bytes of the record.
        len: usize,
        /// Bytes of the header.
        head: usize,
    },
    /// A column running past the record.
    #[error(
        "column `{column}` ({size} bytes at byte {at} of the record) runs past the record's end ({len} bytes)"
    )]
    ColumnPastEnd {
        /// The column.
        column: String,
        /// Its size.
        size: u64,
        /// Where it starts.
        at: usize,
        /// Bytes of the record.
        len: usize,
    },
    /// Column sizes that do not add up to the record.
    #[error("holds {len} bytes, its column sizes add up to {at}")]
    Sizes {
        /// Bytes of the record.
        len: usize,
        /// Their sum.
        at: usize,
    },
    /// A value its encoding does not store.
    #[error("column `{column}` {why}")]
    Corrupt {
        /// The column.
        column: String,
        /// What is wrong.
        why: String,
    },
    /// A field the shard has no column for.
    #[error("has no column for field `{0}`")]
    NoColumn(String),
}
