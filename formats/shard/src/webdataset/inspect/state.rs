//! Where the walk of a tar shard is, and the member it is in.

use crate::webdataset::ustar::sparse::{MapCheck, MapText};

pub(super) enum State {
    Header,
    Data {
        remaining: u64,
        member: Member,
    },
    Padding {
        remaining: u64,
        member: Member,
    },
    Meta {
        remaining: u64,
        pad: u64,
        kind: u8,
        /// The header's data; empty when it is over
        /// [`MAX_META`](crate::webdataset::ustar::MAX_META) and not read.
        data: Vec<u8>,
        size: u64,
        at: u64,
    },
    /// Extended sparse headers after an old GNU sparse header.
    SparseExtension(Box<Sparse>),
    /// The map text (PAX format 1.0) at the start of a sparse member's data.
    SparseText(Box<Sparse>, MapText),
    End {
        zero_start: u64,
        zero_blocks: u64,
        junk_at: Option<u64>,
    },
    Stopped,
}

#[derive(Clone)]
pub(super) struct Member {
    pub(super) name: String,
    pub(super) header_at: u64,
    /// Offset of its data (after any extended sparse headers and map).
    pub(super) data_at: u64,
    /// Bytes stored from `data_at` on.
    pub(super) size: u64,
}

/// A sparse member whose extended headers or map text are being read.
pub(super) struct Sparse {
    pub member: Member,
    /// The map's check; `None` when there is none to make, or once it failed.
    pub(super) check: Option<MapCheck>,
    /// The map is the old GNU header's: extended sparse headers add to it.
    pub(super) header_map: bool,
    /// The map is text at the start of the data (format 1.0).
    pub(super) text: bool,
}
