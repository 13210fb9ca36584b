//! GNU sparse members (`tar --sparse`): a file stored as its data segments only, with a
//! map saying where each segment lies in the file; the rest (the holes) reads as zeros.
//! Python's `tarfile` reads them as regular files and expands the holes, so webdataset
//! yields the whole file. Four layouts:
//!
//! - old GNU (`--format=gnu`, type `S`): up to 4 `(offset, length)` entries in the
//!   header, then extended sparse headers (21 entries each) while the last byte says
//!   more follow; the header's size field counts the stored bytes, the real size is at
//!   byte 483;
//! - PAX 0.0 and 0.1: the map in `GNU.sparse.*` records (see [`super::pax`]);
//! - PAX 1.0 (`--format=pax`, GNU tar's default sparse version): the map is decimal text
//!   (`count\n` then `offset\nlength\n` per segment) in whole blocks at the start of the
//!   member's data, the header's size counting both.
//!
//! [`MapCheck`] checks a map entry by entry, holding nothing per entry, so that what
//! `tarfile` makes of it is exactly the plain expansion [`Expand`] reads: data segments
//! in order, none overlapping or past the real size, holding exactly the stored bytes.

use std::io::{self, Read};
use std::sync::Arc;

use super::field::{B, number};

/// Most data segments one member's map may have for the input walk, which keeps the map
/// to read the member (16 bytes a segment). `verify` checks maps of any length.
pub(crate) const MAX_SEGMENTS: u64 = 1 << 18;

/// One data segment: its offset in the file and its length (stored in map order).
pub(crate) type Segment = (u64, u64);

/// How a sparse member's map disagrees with itself or with what is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SparseError {
    #[error(
        "its sparse map puts a segment at byte {offset}, before the end of the one before it (byte {end}): tarfile expands it into the wrong bytes"
    )]
    Unordered { offset: u64, end: u64 },
    #[error(
        "its sparse map has a segment of {len} bytes at byte {offset}, past the file's {size} bytes: tarfile leaves it out"
    )]
    PastEnd { offset: u64, len: u64, size: u64 },
    #[error(
        "its sparse map's segments hold {mapped} bytes but {stored} are stored: tarfile reads the wrong bytes"
    )]
    Stored { mapped: u64, stored: u64 },
    #[error(
        "its sparse map (format 1.0) is not `count` and `offset`/`length` lines at byte {at} of its data: tarfile fails on it"
    )]
    Text { at: u64 },
    #[error(
        "its sparse map (format 1.0) runs past the {stored} bytes stored for it: tarfile reads the next member as its map and data"
    )]
    MapPastData { stored: u64 },
    #[error(
        "the real size in its GNU sparse header (byte 483) is not a number: tarfile fails on it"
    )]
    RealSize,
    #[error(
        "it has GNU.sparse records and a PAX `size` record: tarfile walks on from the wrong offset"
    )]
    SizeRecord,
    #[error(
        "its GNU.sparse records give no map in a version tarfile knows, so tarfile reads {size} bytes where {stored} are stored"
    )]
    NoMap { size: u64, stored: u64 },
    #[error(
        "its sparse map has more than {MAX_SEGMENTS} data segments, more than shardsmith reads"
    )]
    TooMany,
}

/// Checks a map entry by entry as `tarfile` expands it (`_FileInFile`: holes are made
/// between consecutive entries, and a read finds its place searching forward). Empty
/// entries make no data; they are harmless unless one lies beyond the next segment's
/// start, where its hole would cover that segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapCheck {
    size: u64,
    end: u64,
    empty_max: u64,
    mapped: u64,
    segments: u64,
}

impl MapCheck {
    /// A check for a member of `size` bytes (its real size).
    pub fn new(size: u64) -> Self {
        Self {
            size,
            end: 0,
            empty_max: 0,
            mapped: 0,
            segments: 0,
        }
    }

    /// Adds one entry; `Ok(true)` for a data segment, `Ok(false)` for an empty entry.
    pub fn push(&mut self, offset: u64, len: u64) -> Result<bool, SparseError> {
        if len == 0 {
            self.empty_max = self.empty_max.max(offset);
            return Ok(false);
        }
        let after = self.end.max(self.empty_max);
        if offset < after {
            return Err(SparseError::Unordered { offset, end: after });
        }
        let past = SparseError::PastEnd {
            offset,
            len,
            size: self.size,
        };
        let end = offset.checked_add(len).ok_or(past.clone())?;
        if end > self.size {
            return Err(past);
        }
        self.end = end;
        self.empty_max = 0;
        self.mapped += len;
        self.segments += 1;
        Ok(true)
    }

    /// Data segments so far.
    pub fn segments(&self) -> u64 {
        self.segments
    }

    /// Ends the map of a member with `stored` bytes of data (after any map text).
    pub fn finish(&self, stored: u64) -> Result<(), SparseError> {
        if self.mapped != stored {
            return Err(SparseError::Stored {
                mapped: self.mapped,
                stored,
            });
        }
        Ok(())
    }
}

/// An old GNU sparse header (type `S`): its inline entries, whether extended sparse
/// headers follow, and the real size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OldGnu {
    pub entries: Vec<Segment>,
    pub extended: bool,
    pub size: Option<u64>,
}

/// Up to `count` entries of 24 bytes from `at`, as `tarfile` reads them: stopping at
/// the first that is not a number.
fn entries(block: &[u8; B], at: usize, count: usize) -> Vec<Segment> {
    let mut out = Vec::new();
    for i in 0..count {
        let p = at + 24 * i;
        match (number(&block[p..p + 12]), number(&block[p + 12..p + 24])) {
            (Some(offset), Some(len)) => out.push((offset, len)),
            _ => break,
        }
    }
    out
}

/// The sparse fields of an old GNU header.
pub(crate) fn old_gnu(header: &[u8; B]) -> OldGnu {
    OldGnu {
        entries: entries(header, 386, 4),
        extended: header[482] != 0,
        size: number(&header[483..495]),
    }
}

/// The entries of one extended sparse header, and whether another follows. Like
/// `tarfile`, entries with a zero offset or length are dropped.
pub(crate) fn old_gnu_extension(block: &[u8; B]) -> (Vec<Segment>, bool) {
    let mut found = entries(block, 0, 21);
    found.retain(|&(offset, len)| offset != 0 && len != 0);
    (found, block[504] != 0)
}

/// The map text of format 1.0, read a block at a time as `tarfile` reads it: the count
/// line in the first block, then one number a line; the data starts at the block after
/// the one holding the last number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapText {
    /// Numbers still to come; `None` before the count line.
    left: Option<u64>,
    value: u64,
    digits: u32,
    offset: Option<u64>,
    at: u64,
}

impl Default for MapText {
    fn default() -> Self {
        Self::new()
    }
}

impl MapText {
    pub fn new() -> Self {
        Self {
            left: None,
            value: 0,
            digits: 0,
            offset: None,
            at: 0,
        }
    }

    /// Bytes of map text read (whole blocks).
    pub fn consumed(&self) -> u64 {
        self.at
    }

    /// Reads one block of the member's data, calling `segment` with each
    /// `(offset, length)`; `Ok(true)` when the map ended in it.
    pub fn block(
        &mut self,
        block: &[u8],
        mut segment: impl FnMut(u64, u64) -> Result<(), SparseError>,
    ) -> Result<bool, SparseError> {
        let start = self.at;
        self.at += block.len() as u64;
        if self.left == Some(0) {
            return Ok(true);
        }
        for (i, &b) in block.iter().enumerate() {
            let bad = SparseError::Text {
                at: start + i as u64,
            };
            match b {
                b'0'..=b'9' if self.digits < 20 => {
                    self.value = self
                        .value
                        .checked_mul(10)
                        .and_then(|v| v.checked_add(u64::from(b - b'0')))
                        .ok_or(bad)?;
                    self.digits += 1;
                }
                b'\n' if self.digits > 0 => {
                    let n = std::mem::take(&mut self.value);
                    self.digits = 0;
                    match self.left {
                        None => self.left = Some(n.checked_mul(2).ok_or(bad)?),
                        Some(ref mut left) => {
                            *left -= 1;
                            match self.offset.take() {
                                None => self.offset = Some(n),
                                Some(offset) => segment(offset, n)?,
                            }
                        }
                    }
                    if self.left == Some(0) {
                        return Ok(true);
                    }
                }
                _ => return Err(bad),
            }
        }
        if self.left.is_none() {
            // `tarfile` looks for the count line in the first block only.
            return Err(SparseError::Text { at: start });
        }
        Ok(false)
    }
}

/// A sparse member's bytes as `tarfile` expands them, from a reader of its stored data
/// segments: zeros for the holes, each segment's bytes in place. The map is checked
/// ([`MapCheck`]) and holds only data segments.
pub(crate) struct Expand<R> {
    inner: R,
    map: Arc<[Segment]>,
    size: u64,
    pos: u64,
    next: usize,
}

impl<R: Read> Expand<R> {
    pub fn new(inner: R, map: Arc<[Segment]>, size: u64) -> Self {
        Self {
            inner,
            map,
            size,
            pos: 0,
            next: 0,
        }
    }
}

impl<R: Read> Read for Expand<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self
            .map
            .get(self.next)
            .is_some_and(|&(offset, len)| offset + len <= self.pos)
        {
            self.next += 1;
        }
        let left = self.size.saturating_sub(self.pos);
        let cap = (buf.len() as u64).min(left);
        if cap == 0 {
            return Ok(0);
        }
        let n = match self.map.get(self.next) {
            Some(&(offset, len)) if offset <= self.pos => {
                let want = cap.min(offset + len - self.pos) as usize;
                let n = self.inner.read(&mut buf[..want])?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the stored data of the sparse segment at byte {offset} ends early"
                        ),
                    ));
                }
                n
            }
            next => {
                let hole_end = next.map_or(self.size, |&(offset, _)| offset.min(self.size));
                let want = cap.min(hole_end - self.pos) as usize;
                buf[..want].fill(0);
                want
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}
