//! Content checks shared by every checkpoint format, done during the single read:
//! runs of zero bytes inside tensor data, filesystem holes, NaN/Inf counts, and what a
//! file holds when it is not a checkpoint at all (a Git LFS pointer, an HTML page).

use std::fs::File;
use std::path::Path;

use super::values::{TensorDtype, ValueScan};

/// Shortest run of zero bytes reported inside float tensor data: one filesystem block.
pub const MIN_ZERO_RUN: u64 = 4096;
/// Zero runs kept per tensor (more are counted).
const KEPT_RUNS: usize = 4;
/// Holes kept per file.
const MAX_HOLES: usize = 4096;

/// What a file holds instead of a checkpoint, from its first bytes and size.
pub fn wrong_content(head: &[u8], size: u64) -> Option<String> {
    if size == 0 {
        return Some("empty (0 bytes)".into());
    }
    if head.starts_with(b"version https://git-lfs.github.com/spec/") {
        let text = String::from_utf8_lossy(&head[..head.len().min(512)]);
        let oid = text
            .lines()
            .find_map(|l| l.strip_prefix("oid sha256:"))
            .map(|o| format!(" (oid sha256:{})", o.trim()))
            .unwrap_or_default();
        let real = text
            .lines()
            .find_map(|l| l.strip_prefix("size "))
            .map(|s| format!(" of a {}-byte file", s.trim()))
            .unwrap_or_default();
        return Some(format!(
            "a Git LFS pointer{real}{oid}, not the data: run `git lfs pull` (or download the file itself)"
        ));
    }
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let text = head[start..head.len().min(start + 64)].to_ascii_lowercase();
    if text.starts_with(b"<!doctype html") || text.starts_with(b"<html") {
        return Some(
            "an HTML page (an error or login page saved instead of the download), not a checkpoint"
                .into(),
        );
    }
    if text.starts_with(b"<?xml") && head.windows(7).any(|w| w == b"<Error>") {
        return Some("an XML error document (object store), not a checkpoint".into());
    }
    None
}

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

/// Runs of zero bytes in one byte range of a file, fed in order.
#[derive(Clone, Debug, Default)]
pub struct ZeroRuns {
    pos: u64,
    run_start: u64,
    run: u64,
    nonzero: bool,
    /// The first runs of at least [`MIN_ZERO_RUN`] bytes (absolute file offsets).
    pub runs: Vec<(u64, u64)>,
    /// Number of such runs.
    pub count: u64,
    /// Bytes in such runs.
    pub bytes: u64,
}

impl ZeroRuns {
    /// A tracker for a range starting at absolute offset `start`.
    pub fn new(start: u64) -> Self {
        Self {
            pos: start,
            run_start: start,
            ..Self::default()
        }
    }

    /// True when no non-zero byte was seen.
    pub fn all_zero(&self) -> bool {
        !self.nonzero
    }

    /// The next bytes of the range.
    pub fn update(&mut self, data: &[u8]) {
        for piece in data.chunks(4096) {
            let len = piece.len() as u64;
            if is_zero(piece) {
                if self.run == 0 {
                    self.run_start = self.pos;
                }
                self.run += len;
            } else {
                self.nonzero = true;
                let lead = piece.iter().position(|&b| b != 0).unwrap_or(0) as u64;
                if self.run == 0 {
                    self.run_start = self.pos;
                }
                self.run += lead;
                self.close();
                let trail = piece.iter().rev().position(|&b| b != 0).unwrap_or(0) as u64;
                self.run = trail;
                self.run_start = self.pos + len - trail;
            }
            self.pos += len;
        }
    }

    fn close(&mut self) {
        if self.run >= MIN_ZERO_RUN {
            self.count += 1;
            self.bytes += self.run;
            if self.runs.len() < KEPT_RUNS {
                self.runs.push((self.run_start, self.run_start + self.run));
            }
        }
        self.run = 0;
    }

    /// Ends the range.
    pub fn finish(&mut self) {
        self.close();
    }
}

fn is_zero(piece: &[u8]) -> bool {
    let mut words = piece.chunks_exact(8);
    let acc = words.by_ref().fold(0u64, |a, w| {
        a | u64::from_ne_bytes(w.try_into().expect("8 bytes"))
    });
    acc == 0 && words.remainder().iter().all(|&b| b == 0)
}

/// The content checks of one tensor (or storage): zero runs, and NaN/Inf when asked.
#[derive(Clone, Debug)]
pub struct TensorScan {
    /// Element type, when known.
    pub dtype: Option<TensorDtype>,
    /// Zero runs.
    pub zeros: ZeroRuns,
    /// NaN/Inf counts (with `--scan-values`, float types only).
    pub values: Option<ValueScan>,
}

impl TensorScan {
    /// A scan of the tensor bytes starting at absolute offset `start`.
    pub fn new(start: u64, dtype: Option<TensorDtype>, scan_values: bool) -> Self {
        Self {
            dtype,
            zeros: ZeroRuns::new(start),
            values: dtype.filter(|_| scan_values).and_then(ValueScan::new),
        }
    }

    /// The next bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.zeros.update(data);
        if let Some(values) = self.values.as_mut() {
            values.update(data);
        }
    }

    /// Ends the tensor.
    pub fn finish(&mut self) {
        self.zeros.finish();
    }

    /// Zero runs are suspicious in float data that is not zero everywhere (an all-zero
    /// tensor is a legitimate zero initialisation; integer tensors and masks are often
    /// zero).
    pub fn suspicious_zeros(&self) -> bool {
        self.zeros.count > 0
            && !self.zeros.all_zero()
            && self.dtype.is_some_and(TensorDtype::is_float)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(data: &[u8], piece: usize) -> ZeroRuns {
        let mut z = ZeroRuns::new(100);
        for chunk in data.chunks(piece) {
            z.update(chunk);
        }
        z.finish();
        z
    }

    #[test]
    fn zero_runs_are_found_at_any_alignment_and_piece_size() {
        let mut data = vec![1u8; 20_000];
        data[1000..5200].fill(0);
        data[9000..9500].fill(0);
        data[12_000..20_000].fill(0);
        for piece in [1, 333, 4096, 7000, 20_000] {
            let z = runs(&data, piece);
            assert_eq!(
                z.runs,
                vec![(1100, 5300), (12_100, 20_100)],
                "piece {piece}"
            );
            assert_eq!(z.count, 2);
            assert!(!z.all_zero());
        }
        assert!(runs(&[0u8; 9000], 4096).all_zero());
        assert_eq!(runs(&[0u8; 4095], 4096).count, 0);
    }

    #[test]
    fn wrong_content_is_named() {
        let lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1234\n";
        let msg = wrong_content(lfs, lfs.len() as u64).unwrap();
        assert!(msg.contains("Git LFS pointer of a 1234-byte file"), "{msg}");
        assert!(
            wrong_content(b"\n<!DOCTYPE html><html>", 30)
                .unwrap()
                .contains("HTML")
        );
        assert!(wrong_content(b"", 0).unwrap().contains("empty"));
        assert!(wrong_content(b"PK\x03\x04", 4).is_none());
    }

    #[test]
    fn holes_of_a_sparse_file_are_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let f = File::create(&path).unwrap();
        f.set_len(1 << 20).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(&[1u8; 4096], 0).unwrap();
        f.sync_all().unwrap();
        let h = holes(&path);
        // Filesystems without hole support report none; where supported, the hole
        // starts after the written block.
        if let Some(&(start, end)) = h.first() {
            assert!((4096..=65_536).contains(&start), "{h:?}");
            assert_eq!(end, 1 << 20);
            assert!(in_hole(&h, 500_000, 600_000));
        }
    }
}
