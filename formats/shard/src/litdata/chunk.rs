//! The layout of a LitData chunk file (`litdata/streaming/writer.py` `_create_chunk`,
//! `item_loader.py` `PyTreeLoader.encode_data`), shared by the writer, the input reader and
//! the inspector:
//!
//! - `u32 N`, then `u32 offsets[N+1]`, absolute, the first one `4 + 4 * (N + 1)`;
//! - item `i` is `offsets[i]..offsets[i+1]`: a `u32` size per pytree leaf, then every
//!   leaf's serialized bytes, in leaf order;
//! - all little-endian. Writers of LitData 0.2.7x may append an Arrow IPC footer right
//!   after the items (`item_loader.py` `append_arrow_row_footer`): an Arrow IPC *file*
//!   (`ARROW1` ... `ARROW1`) of the items as rows, its `u32` length, then the magic
//!   [`ARROW_FOOTER_MAGIC`] at the very end. When every value of the item dict is a
//!   `str`, `bytes`, `int`, `float`, `bool` or a dict of those, `optimize` writes the
//!   items only there: every offset is the header's end ([`footer`]).

/// The last 8 bytes of a chunk that carries an Arrow IPC footer.
pub const ARROW_FOOTER_MAGIC: &[u8; 8] = b"LDARW01\0";

/// Why a chunk's bytes are not a LitData chunk.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChunkError {
    /// Shorter than its item count or offsets.
    #[error("the chunk ends inside its header ({len} bytes; {items} items need {need})")]
    Header {
        /// Bytes in the chunk.
        len: u64,
        /// Items it says it holds (0 when it ends before the count).
        items: u64,
        /// Bytes the header needs.
        need: u64,
    },
    /// The first offset is not the end of the header.
    #[error("offset 0 is {found}, the header ends at {want}")]
    FirstOffset {
        /// The first offset.
        found: u64,
        /// Where the header ends.
        want: u64,
    },
    /// Offsets that go back.
    #[error("offset {index} ({found}) is below the offset before it ({before})")]
    Backwards {
        /// The offset's position.
        index: u64,
        /// Its value.
        found: u64,
        /// The previous offset.
        before: u64,
    },
    /// The last offset is past the chunk's end.
    #[error("its last offset is {last}, past the chunk's end ({len} bytes): truncated")]
    PastEnd {
        /// The last offset.
        last: u64,
        /// Bytes in the chunk.
        len: u64,
    },
    /// Bytes after the last item that are no Arrow footer.
    #[error(
        "the chunk has {extra} bytes after its last item (offset {last}) that are no Arrow footer"
    )]
    Trailing {
        /// How many.
        extra: u64,
        /// The last offset.
        last: u64,
    },
    /// Bytes after the last item that start an Arrow IPC file but lack the footer's end.
    #[error(
        "its Arrow footer ({extra} bytes after the last item, offset {last}) is truncated: it does not end with its length and LitData's footer magic"
    )]
    FooterTruncated {
        /// Bytes after the last item.
        extra: u64,
        /// The last offset.
        last: u64,
    },
    /// An Arrow footer whose stated length is not the bytes between the last item and it.
    #[error(
        "its Arrow footer says it holds {stated} bytes, but {room} lie between the last item (offset {last}) and its length"
    )]
    FooterLength {
        /// The length the footer states.
        stated: u64,
        /// Bytes between the last item and the length.
        room: u64,
        /// The last offset.
        last: u64,
    },
    /// An item shorter than its leaf sizes, or longer.
    #[error(
        "item {item} holds {len} bytes, its {leaves} leaf sizes say {}",
        want.map_or("more than fits".to_string(), |w| w.to_string())
    )]
    Item {
        /// The item in the chunk.
        item: u64,
        /// Its bytes.
        len: u64,
        /// Leaves of the pytree.
        leaves: u64,
        /// Bytes its header and values need.
        want: Option<u64>,
    },
}

/// The first bytes (and last) of an Arrow IPC file.
pub const ARROW_IPC_FILE_MAGIC: &[u8; 6] = b"ARROW1";

/// Bytes of the header of a chunk of `items` items.
pub fn header_len(items: u64) -> u64 {
    4 + 4 * (items + 1)
}

fn word(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// True when `data` ends with an Arrow footer.
pub fn has_arrow_footer(data: &[u8]) -> bool {
    data.ends_with(ARROW_FOOTER_MAGIC)
}

/// The item offsets of a whole chunk (`N + 1` of them), checked: the first ends the
/// header, none goes back, the last is the chunk's end (or the start of an Arrow footer).
pub fn offsets(data: &[u8]) -> Result<Vec<u64>, ChunkError> {
    let len = data.len() as u64;
    let items = word(data, 0).map_or(0, u64::from);
    let need = header_len(items);
    if len < need || data.len() < 4 {
        return Err(ChunkError::Header { len, items, need });
    }
    let offsets: Vec<u64> = (0..=items as usize)
        .map(|i| u64::from(word(data, 4 + 4 * i).expect("inside the header")))
        .collect();
    if offsets[0] != need {
        return Err(ChunkError::FirstOffset {
            found: offsets[0],
            want: need,
        });
    }
    for i in 1..offsets.len() {
        if offsets[i] < offsets[i - 1] {
            return Err(ChunkError::Backwards {
                index: i as u64,
                found: offsets[i],
                before: offsets[i - 1],
            });
        }
    }
    let last = *offsets.last().expect("N + 1 offsets");
    if last > len {
        return Err(ChunkError::PastEnd { last, len });
    }
    if last < len {
        footer(data, last)?;
    }
    Ok(offsets)
}

/// The byte range of the Arrow IPC file in the footer of a chunk whose last item ends
/// at `last` (`None` when nothing follows it), checked: the footer ends with the magic,
/// its stated length reaches back exactly to `last`, the IPC file starts and ends with
/// `ARROW1`.
pub fn footer(data: &[u8], last: u64) -> Result<Option<std::ops::Range<usize>>, ChunkError> {
    let len = data.len() as u64;
    if last >= len {
        return Ok(None);
    }
    let extra = len - last;
    let after = &data[last as usize..];
    if !has_arrow_footer(data) {
        return Err(if after.starts_with(ARROW_IPC_FILE_MAGIC) {
            ChunkError::FooterTruncated { extra, last }
        } else {
            ChunkError::Trailing { extra, last }
        });
    }
    let room = extra.saturating_sub(12);
    let stated = if extra >= 12 {
        u64::from(word(data, len as usize - 12).expect("inside the chunk"))
    } else {
        0
    };
    let ipc = &after[..room as usize];
    if extra < 12
        || stated != room
        || !ipc.starts_with(ARROW_IPC_FILE_MAGIC)
        || !ipc.ends_with(ARROW_IPC_FILE_MAGIC)
    {
        return Err(ChunkError::FooterLength { stated, room, last });
    }
    Ok(Some(last as usize..(last + room) as usize))
}

/// The leaf values of item `index` (`item` its bytes) of a pytree of `leaves` leaves.
pub fn split_item(item: &[u8], leaves: usize, index: u64) -> Result<Vec<&[u8]>, ChunkError> {
    let bad = |want: Option<u64>| ChunkError::Item {
        item: index,
        len: item.len() as u64,
        leaves: leaves as u64,
        want,
    };
    let head = 4 * leaves;
    if item.len() < head {
        return Err(bad(Some(head as u64)));
    }
    let sizes: Vec<u64> = (0..leaves)
        .map(|i| u64::from(word(item, 4 * i).expect("inside the item header")))
        .collect();
    let want = sizes.iter().try_fold(head as u64, |n, &s| n.checked_add(s));
    if want != Some(item.len() as u64) {
        return Err(bad(want));
    }
    let mut at = head;
    Ok(sizes
        .iter()
        .map(|&s| {
            let value = &item[at..at + s as usize];
            at += s as usize;
            value
        })
        .collect())
}

/// The header of a chunk whose items have `sizes` bytes each.
pub fn header(sizes: impl ExactSizeIterator<Item = u64>) -> Vec<u8> {
    let items = sizes.len() as u64;
    let mut out = Vec::with_capacity(header_len(items) as usize);
    out.extend_from_slice(&(items as u32).to_le_bytes());
    let mut at = header_len(items);
    out.extend_from_slice(&(at as u32).to_le_bytes());
    for size in sizes {
        at += size;
        out.extend_from_slice(&(at as u32).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(items: &[&[u8]]) -> Vec<u8> {
        let mut out = header(items.iter().map(|i| i.len() as u64));
        for item in items {
            out.extend_from_slice(item);
        }
        out
    }

    #[test]
    fn a_chunk_is_read_back_and_damage_is_named() {
        let item = [2u32.to_le_bytes(), 1u32.to_le_bytes()].concat();
        let item = [&item[..], b"ab", b"c"].concat();
        let data = chunk(&[&item, &item]);
        assert_eq!(offsets(&data).unwrap(), vec![16, 27, 38]);
        let values = split_item(&data[27..38], 2, 1).unwrap();
        assert_eq!(values, vec![&b"ab"[..], &b"c"[..]]);
        assert!(matches!(
            offsets(&data[..30]),
            Err(ChunkError::PastEnd { last: 38, len: 30 })
        ));
        assert!(matches!(
            offsets(&[data.clone(), vec![0]].concat()),
            Err(ChunkError::Trailing { extra: 1, .. })
        ));
        let mut wrong = data.clone();
        wrong[4] = 15;
        assert!(matches!(
            offsets(&wrong),
            Err(ChunkError::FirstOffset {
                found: 15,
                want: 16
            })
        ));
        assert!(matches!(
            split_item(&data[27..37], 2, 1),
            Err(ChunkError::Item { want: Some(11), .. })
        ));
        let ipc = b"ARROW1..ARROW1";
        let with = |ipc: &[u8], stated: u32| {
            [&data[..], ipc, &stated.to_le_bytes(), ARROW_FOOTER_MAGIC].concat()
        };
        let good = with(ipc, 14);
        assert_eq!(offsets(&good).unwrap(), vec![16, 27, 38]);
        assert_eq!(footer(&good, 38).unwrap(), Some(38..52));
        assert!(matches!(
            offsets(&with(ipc, 13)),
            Err(ChunkError::FooterLength {
                stated: 13,
                room: 14,
                last: 38
            })
        ));
        assert!(matches!(
            offsets(&good[..good.len() - 3]),
            Err(ChunkError::FooterTruncated { extra: 23, .. })
        ));
        assert!(matches!(
            offsets(&with(b"xxxx", 4)),
            Err(ChunkError::FooterLength { .. })
        ));
    }
}
