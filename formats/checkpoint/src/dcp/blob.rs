//! The safetensors blob of a DCP data file saved with `serialization_format=SAFETENSORS`
//! (torch 2.15): the zips of the file's bytes items first, back to back from byte 0,
//! then one safetensors blob holding its tensors, to the end of the file. `.metadata`
//! points every tensor of the file at the blob's first byte; without a readable
//! `.metadata` the blob is found after the zips.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::meta::Item;
use crate::safetensors::is_safetensors;
use crate::zip;

/// Most leading bytes searched for the end of the zips before a blob when no
/// `.metadata` says where it is (the zips hold the file's non-tensor items: small).
pub const MAX_SCAN: u64 = 256 << 20;
/// Bytes read per step of that search.
const STEP: usize = 1 << 20;
const EOCD: &[u8; 4] = b"PK\x05\x06";

fn looks_like_blob(file: &File, at: u64, size: u64) -> bool {
    let mut head = [0u8; 16];
    at < size && file.read_exact_at(&mut head, at).is_ok() && is_safetensors(&head, size - at)
}

/// The offset of a safetensors blob that `items` point at, if one is there.
pub fn from_items(file: &File, size: u64, items: &[Item]) -> Option<u64> {
    let mut offsets: Vec<u64> = items
        .iter()
        .filter(|i| i.transforms.is_empty())
        .map(|i| i.offset)
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    offsets
        .into_iter()
        .find(|&at| looks_like_blob(file, at, size))
}

/// Without `.metadata`: a blob at byte 0, or right after the zips that start the file
/// (the end of a zip end record, within the first [`MAX_SCAN`] bytes, after which
/// safetensors starts and before which the zips are whole, back to back from byte 0).
pub fn scan(file: &mut File, size: u64) -> Option<u64> {
    if looks_like_blob(file, 0, size) {
        return Some(0);
    }
    let limit = size.min(MAX_SCAN);
    let mut buf = vec![0u8; STEP + 3];
    let mut at = 0u64;
    while at < limit {
        let n = usize::try_from((limit - at).min(buf.len() as u64)).unwrap_or(buf.len());
        file.read_exact_at(&mut buf[..n], at).ok()?;
        for i in 0..n.saturating_sub(3) {
            if &buf[i..i + 4] != EOCD {
                continue;
            }
            // A torch zip's end record has no comment: the blob starts 22 bytes on.
            let blob = at + i as u64 + 22;
            if looks_like_blob(file, blob, size) && zip::locate(file, blob, true).damage.is_none() {
                return Some(blob);
            }
        }
        if at + n as u64 >= limit {
            break;
        }
        // The next window overlaps this one by 3 bytes: no signature is split unseen.
        at += (n - 3) as u64;
    }
    None
}
