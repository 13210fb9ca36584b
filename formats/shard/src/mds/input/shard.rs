//! One shard's bytes: its file found (the raw one when present, else the compressed one
//! decompressed to a scratch file or to memory), its header checked against the index,
//! and its records split into column values.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use shardsmith_store::{InputSource, LocalFile, RangeRead, ReadError};

use super::index::{ColumnSet, FileRef, Shard};
use super::shard_error::{RecordError, ShardError};
use crate::mds::codec::{Family, MdsCompression};
use crate::mds::layout::MAX_SHARD;
use crate::{Error, Result};

/// Read-ahead of sequential record reads.
const WINDOW: u64 = 1 << 20;

/// A shard's bytes, ready for positioned reads.
pub(super) struct Opened {
    pub(super) data: Arc<dyn RangeRead>,
    /// The file read, relative to the root.
    pub(super) rel: String,
    /// True when `data` is a decompressed copy (worth keeping).
    pub(super) copy: bool,
}

/// A decompressed shard held in memory.
struct Memory(Vec<u8>);

impl RangeRead for Memory {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

fn bad(source: &dyn InputSource, rel: &str, reason: String) -> Error {
    Error::BadInput {
        path: source.display(rel),
        reason,
    }
}

/// Opens shard `number` of the index `index` (for messages): its raw file when present,
/// else its compressed file decompressed (into an unnamed file in `scratch`, or memory).
pub(super) fn open(
    source: &dyn InputSource,
    index: &str,
    number: usize,
    shard: &Shard,
    scratch: Option<&Path>,
) -> Result<Opened> {
    let opening = Opening {
        source,
        index,
        number,
        shard,
    };
    match source.open_ranged(&shard.raw.rel) {
        Ok(data) => {
            opening.size_check(&shard.raw.rel, data.len(), shard.raw.bytes)?;
            return Ok(Opened {
                data,
                rel: shard.raw.rel.clone(),
                copy: false,
            });
        }
        Err(ReadError::Vanished) => {}
        Err(e) => return Err(opening.unreadable(&shard.raw.rel, e)),
    }
    let (Some(zip), Some(family)) = (&shard.zip, shard.family) else {
        return Err(bad(
            source,
            &shard.raw.rel,
            format!("does not exist, but {index} lists it (shard entry {number})"),
        ));
    };
    let file = match source.open_ranged(&zip.rel) {
        Ok(file) => file,
        Err(ReadError::Vanished) => {
            return Err(bad(
                source,
                &zip.rel,
                format!(
                    "does not exist (nor does {}), but {index} lists it (shard entry {number})",
                    shard.raw.rel
                ),
            ));
        }
        Err(e) => return Err(opening.unreadable(&zip.rel, e)),
    };
    opening.size_check(&zip.rel, file.len(), zip.bytes)?;
    let raw = opening.decompress(zip, family, &*file)?;
    Ok(Opened {
        data: hold(raw, scratch)?,
        rel: zip.rel.clone(),
        copy: true,
    })
}

/// Shard `number` of the index `index` being opened, for the messages about it.
struct Opening<'a> {
    source: &'a dyn InputSource,
    index: &'a str,
    number: usize,
    shard: &'a Shard,
}

impl Opening<'_> {
    fn unreadable(&self, rel: &str, e: ReadError) -> Error {
        bad(self.source, rel, format!("cannot be read: {e}"))
    }

    /// Refuses a file of `len` bytes when the index lists another size.
    fn size_check(&self, rel: &str, len: u64, listed: Option<u64>) -> Result<()> {
        let (index, number) = (self.index, self.number);
        match listed {
            Some(want) if want != len => Err(bad(
                self.source,
                rel,
                format!("is {len} bytes, {index} says {want} (shard entry {number})"),
            )),
            _ => Ok(()),
        }
    }

    /// The shard's raw bytes from its compressed file `file` (`zip`), checked against
    /// the size the index lists for the raw file.
    fn decompress(&self, zip: &FileRef, family: Family, file: &dyn RangeRead) -> Result<Vec<u8>> {
        let (source, index, number, shard) = (self.source, self.index, self.number, self.shard);
        let len = usize::try_from(file.len())
            .map_err(|_| bad(source, &zip.rel, "is too large to read".into()))?;
        let mut packed = vec![0u8; len];
        file.read_exact_at(0, &mut packed)
            .map_err(|e| bad(source, &zip.rel, format!("cannot be read: {e}")))?;
        let limit = shard.raw.bytes.unwrap_or(MAX_SHARD).min(MAX_SHARD);
        let raw = MdsCompression::decompress(family, &packed, limit).map_err(|e| {
            bad(
                source,
                &zip.rel,
                format!("cannot be decompressed as {}: {e}", family.name()),
            )
        })?;
        drop(packed);
        if let Some(want) = shard.raw.bytes
            && want != raw.len() as u64
        {
            return Err(bad(
                source,
                &zip.rel,
                format!(
                    "decompresses to {} bytes, {index} says {want} for {} (shard entry {number})",
                    raw.len(),
                    shard.raw.rel
                ),
            ));
        }
        Ok(raw)
    }
}

/// A decompressed shard's bytes, ready for positioned reads: in an unnamed file in
/// `scratch`, or in memory.
fn hold(raw: Vec<u8>, scratch: Option<&Path>) -> Result<Arc<dyn RangeRead>> {
    Ok(match scratch {
        Some(dir) => {
            let copy = || -> io::Result<LocalFile> {
                let mut file = tempfile::tempfile_in(dir)?;
                file.write_all(&raw)?;
                LocalFile::new(file)
            };
            Arc::new(copy().map_err(|e| Error::io("writing a decompressed copy in", dir, e))?)
        }
        None => Arc::new(Memory(raw)),
    })
}

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([
        bytes[at],
        bytes[at + 1],
        bytes[at + 2],
        bytes[at + 3],
    ]))
}

/// Reads the header of a shard the index says holds `samples` samples and checks it
/// against the file: the count, and every offset within the file and in order. The
/// error is the reason, for the caller to name the shard.
pub(super) fn offsets(data: &dyn RangeRead, samples: u64) -> Result<Vec<u64>, ShardError> {
    let len = data.len();
    let header = samples
        .checked_add(2)
        .and_then(|n| n.checked_mul(4))
        .filter(|&h| h <= len)
        .ok_or(ShardError::Short { len, samples })?;
    let mut table = vec![0u8; header as usize];
    data.read_exact_at(0, &mut table)
        .map_err(ShardError::Unreadable)?;
    let count = word(&table, 0);
    if count != samples {
        return Err(ShardError::Count { count, samples });
    }
    let mut offsets = Vec::with_capacity(samples as usize + 1);
    let mut previous = header;
    for i in 0..=samples as usize {
        let at = 4 + 4 * i;
        let offset = word(&table, at);
        if offset > len {
            return Err(ShardError::Truncated {
                sample: i.saturating_sub(1).min(samples.saturating_sub(1) as usize),
                edge: if i == 0 { "starts" } else { "ends" },
                offset,
                at,
                len,
            });
        }
        if offset < previous {
            return Err(if i == 0 {
                ShardError::InsideHeader { offset, at, header }
            } else {
                ShardError::Backwards {
                    sample: i - 1,
                    offset,
                    at,
                    previous,
                }
            });
        }
        offsets.push(offset);
        previous = offset;
    }
    if previous != len {
        return Err(ShardError::Trailing {
            extra: len - previous,
            end: previous,
            at: 4 + 4 * samples,
        });
    }
    Ok(offsets)
}

/// Reads the start and end of record `local` of a shard whose header was checked.
pub(super) fn record_bounds(data: &dyn RangeRead, local: u64) -> Result<(u64, u64), ShardError> {
    let mut pair = [0u8; 8];
    let at = 4 + 4 * local;
    data.read_exact_at(at, &mut pair)
        .map_err(|source| ShardError::Offsets { at, source })?;
    let (start, end) = (word(&pair, 0), word(&pair, 4));
    if start > end || end > data.len() {
        return Err(ShardError::Outside {
            local,
            start,
            end,
            at,
            len: data.len(),
        });
    }
    Ok((start, end))
}

/// Splits a record into its column values (in column order). The error is the reason.
pub(super) fn split<'a>(set: &ColumnSet, record: &'a [u8]) -> Result<Vec<&'a [u8]>, RecordError> {
    let head = 4 * set.variable;
    if record.len() < head {
        return Err(RecordError::ShortHeader {
            len: record.len(),
            head,
        });
    }
    let mut values = Vec::with_capacity(set.columns.len());
    let mut at = head;
    let mut next_size = 0;
    for column in &set.columns {
        let size = match column.fixed {
            Some(n) => n,
            None => {
                let n = word(record, next_size);
                next_size += 4;
                n
            }
        };
        let end = (at as u64).saturating_add(size);
        if end > record.len() as u64 {
            return Err(RecordError::ColumnPastEnd {
                column: column.name.clone(),
                size,
                at,
                len: record.len(),
            });
        }
        values.push(&record[at..end as usize]);
        at = end as usize;
    }
    if at != record.len() {
        return Err(RecordError::Sizes {
            len: record.len(),
            at,
        });
    }
    Ok(values)
}

/// A reusable buffer of consecutive bytes of one shard (read ahead when sequential).
#[derive(Default)]
pub(super) struct Window {
    data: Vec<u8>,
    start: u64,
}

impl Window {
    /// Bytes `start..end` of `source`, reading ahead when `ahead`.
    pub(super) fn read(
        &mut self,
        source: &dyn RangeRead,
        start: u64,
        end: u64,
        ahead: bool,
    ) -> io::Result<&[u8]> {
        let have = self.start..=self.start + self.data.len() as u64;
        if !(have.contains(&start) && have.contains(&end)) {
            let stop = if ahead {
                end.max(start + WINDOW).min(source.len())
            } else {
                end
            };
            self.data.clear();
            self.data.resize((stop - start) as usize, 0);
            source.read_exact_at(start, &mut self.data)?;
            self.start = start;
        }
        let from = (start - self.start) as usize;
        Ok(&self.data[from..from + (end - start) as usize])
    }

    /// Forgets the bytes (another shard comes next).
    pub(super) fn reset(&mut self) {
        self.data.clear();
        self.start = 0;
    }
}
