//! The tar format as the writer writes it and as Python's `tarfile` (webdataset's
//! reader) reads it, shared by the writer, `verify`'s walk (`inspect`) and the input
//! walk of `ls`, `cat`, `stats` and `pack` (`input`), so that they can never read one
//! file two ways: sizes, numeric fields, PAX records ([`pax`]) and GNU sparse maps
//! ([`sparse`]).

pub(crate) mod pax;
pub(crate) mod sparse;

use self::pax::{PaxInfo, PaxSparse};
use self::sparse::{Segment, SparseError};

/// Tar block size.
pub const BLOCK: u64 = 512;
/// Longest member name both readers key correctly (wids reads only the name field).
pub const MAX_NAME: usize = 100;
/// Largest member the 11-digit octal size field holds.
pub const MAX_MEMBER: u64 = (1 << 33) - 1;
/// Tar block size, as a length.
pub(crate) const B: usize = BLOCK as usize;
/// Largest GNU long name or PAX header read into memory (the walks refuse or skip
/// larger ones, by name).
pub(crate) const MAX_META: u64 = 1 << 20;

/// The bytes of a NUL-terminated header field, up to the first NUL.
pub(crate) fn cstr(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// A numeric header field as `tarfile`'s `nti` reads it: octal text up to the first
/// NUL, spaces around it, empty meaning 0; or GNU base-256 (first byte `0x80`; `0xff`,
/// a negative number, is refused). `None` when it is neither.
pub(crate) fn number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        if field[0] == 0xff {
            return None;
        }
        let mut n: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            n = n.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(n);
    }
    let text = std::str::from_utf8(cstr(field)).ok()?.trim_matches(' ');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

/// Where a sparse member's map comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MapFrom {
    /// The old GNU header's entries, then those of its extended sparse headers.
    Header(Vec<Segment>),
    /// PAX records (format 0.0 or 0.1).
    Records(&'static str, Vec<Segment>),
    /// Text in whole blocks at the start of the data (format 1.0).
    Data,
}

impl MapFrom {
    /// The layout's name, for messages.
    pub fn describe(&self) -> String {
        match self {
            MapFrom::Header(_) => "old GNU format, type `S`".into(),
            MapFrom::Records(version, _) => format!("PAX format {version}"),
            MapFrom::Data => "PAX format 1.0".into(),
        }
    }
}

/// A regular member's sizes as `tarfile` reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Bytes stored after the header and any extended sparse headers (map text
    /// included): the next header follows them, padded to a block.
    pub stored: u64,
    /// Its size as `tarfile` reports and reads it: a sparse file's real size.
    pub size: u64,
    /// Extended sparse headers follow the header (old GNU format).
    pub extension: bool,
    /// Its map, when it is sparse.
    pub map: Option<MapFrom>,
}

/// The layout of a regular member (type `0`, NUL, `7` or `S`) from its header, the
/// number in its size field and what the extended headers before it said (their name
/// taken out). As in `tarfile`, sparse records in PAX override an old GNU map (whose
/// extended headers are still there to step over).
pub(crate) fn layout(
    header: &[u8; B],
    header_size: u64,
    pax: PaxInfo,
) -> Result<Layout, SparseError> {
    let stored = pax.stored.unwrap_or(header_size);
    let mut layout = Layout {
        stored,
        size: pax.size.unwrap_or(stored),
        extension: false,
        map: None,
    };
    if header[156] == b'S' {
        let gnu = sparse::old_gnu(header);
        layout.size = pax.size.or(gnu.size).ok_or(SparseError::RealSize)?;
        layout.extension = gnu.extended;
        layout.map = Some(MapFrom::Header(gnu.entries));
    }
    match pax.sparse {
        Some(PaxSparse::Records { version, map }) => {
            layout.map = Some(MapFrom::Records(version, map));
        }
        Some(PaxSparse::InData) => layout.map = Some(MapFrom::Data),
        None => {}
    }
    if layout.map.is_some() && pax.stored.is_some() {
        return Err(SparseError::SizeRecord);
    }
    if layout.map.is_none() && layout.size != stored {
        return Err(SparseError::NoMap {
            size: layout.size,
            stored,
        });
    }
    Ok(layout)
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
