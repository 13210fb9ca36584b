//! The tar format as the writer writes it and as Python's `tarfile` (webdataset's
//! reader) reads it, shared by the writer, `verify`'s walk (`inspect`) and the input
//! walk of `ls`, `cat`, `stats` and `pack` (`input`), so that they can never read one
//! file two ways: sizes, numeric fields, PAX records ([`pax`]) and GNU sparse maps
//! ([`sparse`]).

mod field;
pub(crate) mod pax;
pub(crate) mod sparse;

use self::pax::{PaxInfo, PaxSparse};
use self::sparse::{Segment, SparseError};

pub(crate) use self::field::{B, MAX_META, cstr, number};
pub use self::field::{BLOCK, MAX_MEMBER, MAX_NAME};

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
