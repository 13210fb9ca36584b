//! Filesystem holes: ranges a sparse file never wrote, where a lost write reads as zeros.

use std::fs::File;
use std::path::Path;

/// Holes kept per file.
const MAX_HOLES: usize = 4096;

/// Byte ranges of the file that are filesystem holes (never written; read as zeros).
/// Empty when the file's allocated blocks cover its size, which is O(1) to check.
pub fn holes(path: &Path) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let Ok(meta) = file.metadata() else {
        return Vec::new();
    };
    let len = meta.len();
    if meta.blocks().saturating_mul(512) >= len {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut pos = 0u64;
    while pos < len && out.len() < MAX_HOLES {
        let hole = match rustix::fs::seek(&file, rustix::fs::SeekFrom::Hole(pos)) {
            Ok(h) => h,
            Err(_) => break,
        };
        if hole >= len {
            break;
        }
        let data = match rustix::fs::seek(&file, rustix::fs::SeekFrom::Data(hole)) {
            Ok(d) => d.min(len),
            Err(_) => len, // ENXIO: a hole to the end of the file
        };
        if data <= hole {
            break;
        }
        out.push((hole, data));
        pos = data;
    }
    out
}

/// True when `[start, end)` lies inside one of `holes`.
pub fn in_hole(holes: &[(u64, u64)], start: u64, end: u64) -> bool {
    holes.iter().any(|&(h0, h1)| h0 <= start && end <= h1)
}
