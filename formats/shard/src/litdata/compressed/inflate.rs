//! Compressed chunk bytes back to a plain chunk: [`inflate_file`] (`chunk`),
//! [`unframe`] (`batch`), [`unsample`] (`sample`).

use std::io::Read;

use crate::litdata::chunk::{self, ChunkError, header_len};
use crate::litdata::format::MAX_CHUNK;

/// The first bytes of a `batch` chunk.
pub const FRAMED_MAGIC: &[u8; 8] = b"LDFZ01\0\0";
/// Magic, version, flags, items, items per frame, frames.
const PREFIX: usize = 24;
/// One frame entry.
const FRAME: usize = 24;

/// Why a compressed chunk cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WrapError {
    /// Bytes that are no zstd (damaged or cut short).
    #[error("{what} is no readable zstd: {reason}")]
    Zstd {
        /// What was inflated: `its zstd stream`, `frame 2`, `item 5`.
        what: String,
        /// zstd's reason.
        reason: String,
        /// zstd stopped at the end of its bytes, inside a frame.
        cut: bool,
    },
    /// Inflated to a size other than the one stated.
    #[error("{what} inflates to {found} bytes, {stated}")]
    Size {
        /// What was inflated.
        what: String,
        /// Bytes it gave.
        found: u64,
        /// What was expected, and who says so.
        stated: String,
    },
    /// More than a chunk can hold.
    #[error("{what} inflates past {MAX_CHUNK} bytes, more than a LitData chunk holds")]
    TooLarge {
        /// What was inflated.
        what: String,
    },
    /// The file ends inside the framed header or its tables.
    #[error("the chunk ends inside its framed zstd header ({len} bytes, its tables need {need})")]
    Truncated {
        /// Bytes in the file.
        len: u64,
        /// Bytes the header and tables need.
        need: u64,
    },
    /// A framed header or frame table that is not LitData's.
    #[error("its framed zstd header is invalid: {0}")]
    Header(String),
    /// A frame that ends past the file's end.
    #[error("{what} ends at {end}, past the chunk's end ({len} bytes): truncated")]
    FramePastEnd {
        /// The frame.
        what: String,
        /// Where it ends.
        end: u64,
        /// Bytes in the file.
        len: u64,
    },
    /// A `batch` chunk without the magic.
    #[error(
        "index.json says compression_level batch, but the chunk does not start with LitData's LDFZ01 magic"
    )]
    NoMagic,
    /// The plain header of a `sample` chunk is damaged.
    #[error(transparent)]
    Chunk(#[from] ChunkError),
}

impl WrapError {
    /// True when the chunk looks cut short.
    pub fn is_truncated(&self) -> bool {
        match self {
            WrapError::Truncated { .. }
            | WrapError::FramePastEnd { .. }
            | WrapError::Zstd { cut: true, .. } => true,
            WrapError::Chunk(e) => {
                matches!(e, ChunkError::Header { .. } | ChunkError::PastEnd { .. })
            }
            _ => false,
        }
    }
}

/// Appends to `out` what the zstd bytes `from` inflate to, at most `MAX_CHUNK` in all:
/// the bytes added.
fn inflate_into(
    from: impl Read,
    out: &mut Vec<u8>,
    what: &dyn Fn() -> String,
) -> Result<u64, WrapError> {
    let zstd_error = |e: std::io::Error| WrapError::Zstd {
        what: what(),
        reason: e.to_string(),
        cut: e.kind() == std::io::ErrorKind::UnexpectedEof,
    };
    let room = MAX_CHUNK.saturating_sub(out.len() as u64);
    let before = out.len();
    zstd::stream::read::Decoder::new(from)
        .map_err(zstd_error)?
        .take(room + 1)
        .read_to_end(out)
        .map_err(zstd_error)?;
    let added = (out.len() - before) as u64;
    if added > room {
        return Err(WrapError::TooLarge { what: what() });
    }
    Ok(added)
}

/// The plain chunk that a `chunk`-wrapped file (`from`, read as it streams) inflates to.
pub fn inflate_file(from: impl Read) -> Result<Vec<u8>, WrapError> {
    let mut out = Vec::new();
    inflate_into(from, &mut out, &|| "its zstd stream".to_string())?;
    Ok(out)
}

fn u32_at(data: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(
        data[at..at + 4].try_into().expect("4 bytes"),
    ))
}

/// The plain chunk of a `batch` (`LDFZ01` framed) file: the header checked against the
/// file (every table inside it, frames in order covering every item, each frame's
/// uncompressed length the bytes its items' offsets span), then every frame inflated.
pub fn unframe(file: &[u8]) -> Result<Vec<u8>, WrapError> {
    if !file.starts_with(FRAMED_MAGIC) {
        return Err(WrapError::NoMagic);
    }
    let len = file.len() as u64;
    if file.len() < PREFIX {
        return Err(WrapError::Truncated {
            len,
            need: PREFIX as u64,
        });
    }
    let version = u16::from_le_bytes([file[8], file[9]]);
    if version != 1 {
        return Err(WrapError::Header(format!(
            "version {version}, LitData writes version 1"
        )));
    }
    let (items, per_frame, frames) = (u32_at(file, 12), u32_at(file, 16), u32_at(file, 20));
    if items == 0 || per_frame == 0 || frames == 0 {
        return Err(WrapError::Header(format!(
            "{items} items, {per_frame} items per frame, {frames} frames (none may be 0)"
        )));
    }
    let offsets_at = PREFIX as u64;
    let table_at = offsets_at + 4 * (items + 1);
    let payload_at = table_at + FRAME as u64 * frames;
    if payload_at > len {
        return Err(WrapError::Truncated {
            len,
            need: payload_at,
        });
    }
    // The tables are inside the file: `items` and `frames` are bounded by its size.
    let offsets: Vec<u64> = (0..=items as usize)
        .map(|i| u32_at(file, offsets_at as usize + 4 * i))
        .collect();
    if offsets[0] != 0 {
        return Err(WrapError::Header(format!(
            "its first item offset is {}, not 0",
            offsets[0]
        )));
    }
    if let Some(i) = (1..offsets.len()).find(|&i| offsets[i] < offsets[i - 1]) {
        return Err(WrapError::Header(format!(
            "item offset {i} ({}) is below the one before it ({})",
            offsets[i],
            offsets[i - 1]
        )));
    }
    let head = header_len(items);
    if head + offsets[items as usize] > MAX_CHUNK {
        return Err(WrapError::TooLarge {
            what: "its items".into(),
        });
    }
    let mut out = Vec::with_capacity(head as usize);
    out.extend_from_slice(&(items as u32).to_le_bytes());
    for offset in &offsets {
        out.extend_from_slice(&((head + offset) as u32).to_le_bytes());
    }
    let mut next = 0;
    for f in 0..frames {
        let at = (table_at + FRAME as u64 * f) as usize;
        let (first, count) = (u32_at(file, at), u32_at(file, at + 4));
        let start = u64::from_le_bytes(file[at + 8..at + 16].try_into().expect("8 bytes"));
        let (packed, unpacked) = (u32_at(file, at + 16), u32_at(file, at + 20));
        let what = || format!("frame {f} (items {first}..{})", first + count);
        if first != next || first != f * per_frame || count == 0 || first + count > items {
            return Err(WrapError::Header(format!(
                "{} does not follow the frame before it ({items} items, {per_frame} per frame)",
                what()
            )));
        }
        next = first + count;
        let end = start.saturating_add(packed);
        if packed == 0 || start < payload_at {
            return Err(WrapError::Header(format!(
                "{} lies at {start}..{end}, outside the frames' bytes ({payload_at}..{len})",
                what()
            )));
        }
        if end > len {
            return Err(WrapError::FramePastEnd {
                what: what(),
                end,
                len,
            });
        }
        let span = offsets[next as usize] - offsets[first as usize];
        if unpacked != span {
            return Err(WrapError::Header(format!(
                "{} says it inflates to {unpacked} bytes, its items' offsets span {span}",
                what()
            )));
        }
        let found = inflate_into(
            &file[start as usize..(start + packed) as usize],
            &mut out,
            &what,
        )?;
        if found != unpacked {
            return Err(WrapError::Size {
                what: what(),
                found,
                stated: format!("its frame entry says {unpacked}"),
            });
        }
    }
    if next != items {
        return Err(WrapError::Header(format!(
            "its frames hold {next} items, its header says {items}"
        )));
    }
    Ok(out)
}

/// The plain chunk of a `sample` file: the plain header, every item's bytes one zstd
/// frame.
pub fn unsample(file: &[u8]) -> Result<Vec<u8>, WrapError> {
    let packed = chunk::offsets(file)?;
    let items = packed.len() as u64 - 1;
    let head = header_len(items);
    let mut out = vec![0; head as usize];
    out[..4].copy_from_slice(&(items as u32).to_le_bytes());
    for i in 0..items as usize {
        let (start, end) = (packed[i] as usize, packed[i + 1] as usize);
        let what = || format!("item {i}");
        if start == end {
            return Err(WrapError::Zstd {
                what: what(),
                reason: "it holds no bytes".into(),
                cut: false,
            });
        }
        inflate_into(&file[start..end], &mut out, &what)?;
        let offset = (out.len() as u32).to_le_bytes();
        out[4 + 4 * (i + 1)..8 + 4 * (i + 1)].copy_from_slice(&offset);
    }
    out[4..8].copy_from_slice(&(head as u32).to_le_bytes());
    Ok(out)
}
