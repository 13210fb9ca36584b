//! Walks tar headers the way Python's `tarfile` (webdataset's reader) does: V7, ustar
//! (name and prefix), old GNU, GNU long names (`L`), PAX extended headers (`x`: `path`,
//! `size`), GNU sparse members (old GNU type `S` with its extended sparse headers, PAX
//! formats 0.0, 0.1 and 1.0: their maps, which reading expands); base-256 numbers;
//! either checksum (unsigned or signed). PAX records and sparse maps are read by the
//! parsers `verify` uses ([`crate::webdataset::ustar`]). Unlike `tarfile`, damage is an
//! error with its byte offset, never a silent end: a bad checksum, a header cut short,
//! member data past the end of the file, a malformed PAX record, an inconsistent map.

use std::io;
use std::sync::Arc;

use super::bytes::TarBytes;
use crate::webdataset::ustar::pax::PaxInfo;
use crate::webdataset::ustar::sparse::{
    MAX_SEGMENTS, MapCheck, MapText, Segment, SparseError, old_gnu_extension,
};
use crate::webdataset::ustar::{B, MapFrom, cstr, layout, number};
pub(super) use crate::webdataset::ustar::{BLOCK, MAX_META};

/// What a member is, as far as sample grouping cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file (typeflag `0`, NUL, `7`, or `S`: a GNU sparse file).
    Regular,
    /// A directory: ignored, as webdataset ignores it.
    Directory,
    /// Anything else webdataset ignores (links, devices, FIFOs), by name.
    Other(&'static str),
    /// A type `tarfile` does not know: ignored too, but its data is skipped.
    Unknown(u8),
}

/// One member, its extension headers folded in.
#[derive(Debug)]
pub(super) struct Member {
    /// Offset of its first header block (an extension header's when it has one).
    pub start: u64,
    /// The full name, or the raw bytes when they are not UTF-8.
    pub name: Result<String, Vec<u8>>,
    pub kind: Kind,
    /// Offset of its data (of a sparse file's stored segments, after any map).
    pub data: u64,
    /// Its size as `tarfile` reads it (a sparse file's real size).
    pub size: u64,
    /// Bytes stored from `data` on (of a sparse file, its segments').
    pub stored: u64,
    /// A sparse file's data segments; `None` for a plain member.
    pub sparse: Option<Arc<[Segment]>>,
    /// Why its data cannot be read here, when it cannot (a map too large to keep).
    pub unread: Option<String>,
}

impl Member {
    /// The name for messages.
    pub fn shown(&self) -> String {
        match &self.name {
            Ok(name) => name.clone(),
            Err(raw) => String::from_utf8_lossy(raw).into_owned(),
        }
    }
}

/// Damage found while walking: where, and what.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct WalkError {
    pub at: u64,
    pub reason: String,
}

fn fail<T>(at: u64, reason: impl Into<String>) -> Result<T, WalkError> {
    Err(WalkError {
        at,
        reason: reason.into(),
    })
}

fn io_fail<T>(at: u64, e: io::Error) -> Result<T, WalkError> {
    fail(at, format!("cannot be read: {e}"))
}

pub(super) fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK).saturating_mul(BLOCK)
}

fn checksum_ok(block: &[u8; B]) -> bool {
    let Some(stored) = number(&block[148..156]) else {
        return false;
    };
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in block.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    stored == unsigned || i64::try_from(stored).is_ok_and(|s| s == signed)
}

/// Walks the members of one tar from a given header offset.
pub(super) struct Walker {
    /// Offset of the next header.
    next: u64,
    /// The member before it (name, data offset, size), for a truncation message.
    last: Option<(String, u64, u64)>,
    done: bool,
}

impl Walker {
    /// A walk whose next header is at `start`.
    pub fn at(start: u64) -> Self {
        Self {
            next: start,
            last: None,
            done: false,
        }
    }

    /// Reads `size` bytes of metadata (a long name, PAX records) and its padding.
    fn meta(src: &mut dyn TarBytes, size: u64, at: u64, what: &str) -> Result<Vec<u8>, WalkError> {
        if size > MAX_META {
            return fail(
                at,
                format!("has a {what} of {size} bytes (more than {MAX_META} accepted)"),
            );
        }
        let mut data = vec![0u8; padded(size) as usize];
        let n = src.fill(&mut data).or_else(|e| io_fail(at, e))?;
        if n < size as usize {
            return fail(
                at,
                format!("is truncated: its {what} of {size} bytes ends after {n} bytes"),
            );
        }
        data.truncate(size as usize);
        Ok(data)
    }

    /// The next member, `None` at the end of the archive (a zero block, or the end of
    /// the file right after a member: tolerated, as every reader does).
    pub fn next(&mut self, src: &mut dyn TarBytes) -> Result<Option<Member>, WalkError> {
        if self.done {
            return Ok(None);
        }
        let pos = src.pos();
        if pos < self.next {
            let skipped = src.skip(self.next - pos).or_else(|e| io_fail(pos, e))?;
            if skipped < self.next - pos {
                self.done = true;
                if let Some((name, data, size)) = self.last.take()
                    && pos + skipped < data + size
                {
                    return fail(
                        data,
                        format!(
                            "is truncated: member `{name}` has {size} bytes of data from offset {data}, but the file ends at offset {}",
                            pos + skipped
                        ),
                    );
                }
                return Ok(None);
            }
        }
        let start = self.next;
        // A long name from an `L` record or a PAX header: the first one wins, as
        // `tarfile` applies the outermost extension header last.
        let mut long_name: Option<Vec<u8>> = None;
        let mut pax = PaxInfo::default();
        let mut extended = false;
        loop {
            let at = src.pos();
            let block = Self::header(src, at, extended)?;
            let Some(block) = block else {
                self.done = true;
                return Ok(None);
            };
            let Some(size) = number(&block[124..136]) else {
                return fail(
                    at,
                    format!("is corrupt: unreadable size field in the tar header at offset {at}"),
                );
            };
            let flag = block[156];
            match flag {
                b'L' => {
                    let name = cstr(&Self::meta(src, size, at, "GNU long name")?).to_vec();
                    long_name.get_or_insert(name);
                    extended = true;
                    continue;
                }
                b'x' | b'X' | b'g' => {
                    let data = Self::meta(src, size, at, "PAX header")?;
                    let mut info = PaxInfo::parse(&data).or_else(|e| {
                        fail(
                            at,
                            format!("is corrupt: the PAX extended header at offset {at}: {e}"),
                        )
                    })?;
                    if flag != b'g' {
                        // Global records: nothing the grouping uses.
                        if let Some(name) = info.name.take() {
                            long_name.get_or_insert(name);
                        }
                        pax = pax.then(info);
                        extended = true;
                    }
                    continue;
                }
                b'K' => {
                    // A long link target: nothing the grouping uses.
                    Self::meta(src, size, at, "tar extension header")?;
                    continue;
                }
                _ => {}
            }
            let name = if let Some(name) = long_name {
                name
            } else {
                let name = cstr(&block[..100]);
                let prefix = cstr(&block[345..500]);
                if &block[257..263] == b"ustar\0" && !prefix.is_empty() {
                    [prefix, b"/", name].concat()
                } else {
                    name.to_vec()
                }
            };
            let kind = match flag {
                b'0' | b'7' | b'S' => Kind::Regular,
                0 if name.ends_with(b"/") => Kind::Directory,
                0 => Kind::Regular,
                b'5' => Kind::Directory,
                b'1' => Kind::Other("a hard link"),
                b'2' => Kind::Other("a symbolic link"),
                b'3' | b'4' => Kind::Other("a device"),
                b'6' => Kind::Other("a FIFO"),
                other => Kind::Unknown(other),
            };
            let name = String::from_utf8(name).map_err(|e| e.into_bytes());
            let mut member = Member {
                start,
                name,
                kind,
                data: at + BLOCK,
                size: 0,
                stored: 0,
                sparse: None,
                unread: None,
            };
            // `tarfile` skips data only for regular and unknown members.
            let stored = match kind {
                Kind::Regular => Self::regular(src, &block, size, pax, &mut member)?,
                Kind::Unknown(_) => {
                    member.size = pax.stored.unwrap_or(size);
                    member.size
                }
                _ => 0,
            };
            member.stored = stored;
            let data = member.data;
            let Some(end) = data
                .checked_add(stored)
                .filter(|e| e.checked_add(BLOCK).is_some())
            else {
                return fail(
                    at,
                    format!("is corrupt: member size {stored} at offset {at} overflows"),
                );
            };
            if let Some(len) = src.len()
                && end > len
            {
                return fail(
                    data,
                    format!(
                        "is truncated: member `{}` has {stored} bytes of data from offset {data}, but the file ends at offset {len}",
                        member.shown()
                    ),
                );
            }
            self.next = data + padded(stored);
            self.last = Some((member.shown(), data, stored));
            return Ok(Some(member));
        }
    }

    /// The next header block; `None` at the end of the archive.
    fn header(
        src: &mut dyn TarBytes,
        at: u64,
        extended: bool,
    ) -> Result<Option<[u8; B]>, WalkError> {
        let mut block = [0u8; B];
        let n = src.fill(&mut block).or_else(|e| io_fail(at, e))?;
        if n == 0 && !extended {
            return Ok(None);
        }
        if n < B && at == 0 {
            return fail(
                0,
                format!(
                    "is not a tar archive: it ends after {n} bytes, inside the first 512-byte tar header (offset 0)"
                ),
            );
        }
        if n < B {
            return fail(
                at,
                format!("is truncated: the tar header at offset {at} ends after {n} of 512 bytes"),
            );
        }
        if block.iter().all(|&b| b == 0) {
            if extended {
                return fail(at, "ends right after an extended header, before its member");
            }
            return Ok(None);
        }
        if !checksum_ok(&block) {
            return if at == 0 {
                fail(
                    0,
                    "is not a tar archive: its first 512 bytes are not a tar header (bad header checksum at offset 0)",
                )
            } else {
                fail(
                    at,
                    format!("is corrupt: bad tar header checksum at offset {at}"),
                )
            };
        }
        Ok(Some(block))
    }

    /// Reads what a regular member's layout needs beyond its header (extended sparse
    /// headers, a format 1.0 map), sets its size, data offset and map, and returns the
    /// bytes stored from its data offset on.
    fn regular(
        src: &mut dyn TarBytes,
        block: &[u8; B],
        header_size: u64,
        pax: PaxInfo,
        member: &mut Member,
    ) -> Result<u64, WalkError> {
        let at = member.data - BLOCK;
        let shown = member.shown();
        let corrupt = |e: SparseError| WalkError {
            at,
            reason: format!("is corrupt: sparse member `{shown}` (tar header at offset {at}): {e}"),
        };
        let layout = layout(block, header_size, pax).map_err(corrupt)?;
        member.size = layout.size;
        let Some(from) = layout.map else {
            return Ok(layout.stored);
        };
        let mut check = MapCheck::new(layout.size);
        let mut segments: Vec<Segment> = Vec::new();
        let mut keep = |check: &mut MapCheck, (offset, len): Segment| -> Result<(), SparseError> {
            if check.push(offset, len)? {
                if check.segments() > MAX_SEGMENTS {
                    segments = Vec::new();
                } else {
                    segments.push((offset, len));
                }
            }
            Ok(())
        };
        if let MapFrom::Header(entries) | MapFrom::Records(_, entries) = &from {
            for &entry in entries {
                keep(&mut check, entry).map_err(corrupt)?;
            }
        }
        let mut more = layout.extension;
        while more {
            let mut ext = [0u8; B];
            let n = src.fill(&mut ext).or_else(|e| io_fail(member.data, e))?;
            if n < B {
                return fail(
                    member.data,
                    format!(
                        "is truncated: the extended sparse header of member `{shown}` at offset {} ends after {n} of 512 bytes",
                        member.data
                    ),
                );
            }
            member.data += BLOCK;
            let (entries, next) = old_gnu_extension(&ext);
            if matches!(from, MapFrom::Header(_)) {
                for entry in entries {
                    keep(&mut check, entry).map_err(corrupt)?;
                }
            }
            more = next;
        }
        let mut stored = layout.stored;
        if from == MapFrom::Data {
            let mut text = MapText::new();
            loop {
                if text.consumed() >= stored {
                    return Err(corrupt(SparseError::MapPastData { stored }));
                }
                let mut map = [0u8; B];
                let n = src.fill(&mut map).or_else(|e| io_fail(member.data, e))?;
                if n < B {
                    return fail(
                        member.data,
                        format!(
                            "is truncated: the sparse map of member `{shown}` at offset {} ends after {n} of 512 bytes",
                            member.data
                        ),
                    );
                }
                let done = text
                    .block(&map, |offset, len| keep(&mut check, (offset, len)))
                    .map_err(corrupt)?;
                if done {
                    break;
                }
            }
            if text.consumed() > stored {
                return Err(corrupt(SparseError::MapPastData { stored }));
            }
            member.data += text.consumed();
            stored -= text.consumed();
        }
        check.finish(stored).map_err(corrupt)?;
        if check.segments() > MAX_SEGMENTS {
            member.unread = Some(SparseError::TooMany.to_string());
        } else {
            member.sparse = Some(segments.into());
        }
        Ok(stored)
    }
}
