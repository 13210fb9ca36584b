//! Content checks shared by every checkpoint format, done during the single read:
//! runs of zero bytes inside tensor data, filesystem holes, NaN/Inf counts, and what a
//! file holds when it is not a checkpoint at all (a Git LFS pointer, an HTML page).

use std::fs::File;
use std::path::Path;

use super::values::{TensorDtype, ValueScan};

/// Shortest run of zero bytes reported inside float tensor data: one filesystem block.
pub const MIN_ZERO_RUN: u64 = 4096;
/// Zero runs kept per tensor (more are counted); the zero-run judgement needs them all.
pub const KEPT_RUNS: usize = 16;
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

/// What the zero-run judgement knows of a tensor's layout: its shape and the lengths in
/// bytes its rows may have in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Shape as declared.
    pub shape: Vec<u64>,
    /// Candidate row lengths in bytes, the last dimension's first. Only that one (last
    /// dimension × element size) when the layout is C-contiguous, as in safetensors; one
    /// per dimension when the strides are unknown (a torch storage holding a possibly
    /// transposed tensor): a run is mid-row only when it is mid-row for every candidate.
    pub rows: Vec<u64>,
}

impl Geometry {
    /// The geometry of a tensor of `shape` and `dtype`, when it has a row structure: at
    /// least two rows under every candidate row length. Dimensions of 1 are left out (a
    /// `[n, 1]` tensor is laid out as `[n]`); a vector (one row) has none, so a zero run
    /// inside it cannot be told from a zero segment (say the `k` part of a fused qkv bias).
    pub fn new(shape: &[u64], dtype: TensorDtype, contiguous: bool) -> Option<Self> {
        let dims: Vec<u64> = shape.iter().copied().filter(|&d| d > 1).collect();
        if dims.len() < 2 || !dtype.is_float() {
            return None;
        }
        // The last dimension first: it names rows in findings.
        let mut rows = vec![dims[dims.len() - 1]];
        if !contiguous {
            for &d in dims.iter().rev() {
                if !rows.contains(&d) {
                    rows.push(d);
                }
            }
        }
        let size = dtype.size();
        let rows = rows
            .into_iter()
            .map(|d| d.checked_mul(size))
            .collect::<Option<Vec<u64>>>()?;
        Some(Self {
            shape: shape.to_vec(),
            rows,
        })
    }
}

/// Counts the zero elements (+0.0 and -0.0: every bit zero but the sign bit, which is the
/// top bit of the last byte, little-endian) of a float tensor, fed in pieces of any size.
/// Complex numbers count their real and imaginary parts separately.
#[derive(Clone, Debug, Default)]
pub struct ZeroElements {
    /// Bytes per counted element (0: not counted).
    unit: usize,
    phase: usize,
    acc: u8,
    /// Zero elements seen.
    pub count: u64,
}

impl ZeroElements {
    /// A counter for `dtype`; counts nothing for types that are not float.
    pub fn new(dtype: Option<TensorDtype>) -> Self {
        let unit = match dtype {
            Some(TensorDtype::C64) => 4,
            Some(TensorDtype::C128) => 8,
            Some(d) if d.is_float() => d.size() as usize,
            _ => 0,
        };
        Self {
            unit,
            ..Self::default()
        }
    }

    /// Bytes per counted element (0 when nothing is counted).
    pub fn unit(&self) -> u64 {
        self.unit as u64
    }

    /// The next bytes of the tensor.
    pub fn update(&mut self, mut data: &[u8]) {
        let unit = self.unit;
        if unit == 0 {
            return;
        }
        while self.phase != 0 && !data.is_empty() {
            self.byte(data[0]);
            data = &data[1..];
        }
        let whole = data.len() / unit * unit;
        let (body, rest) = data.split_at(whole);
        self.count += match unit {
            1 => body.iter().filter(|&&b| b & 0x7f == 0).count(),
            2 => body
                .chunks_exact(2)
                .filter(|c| u16::from_le_bytes([c[0], c[1]]) & 0x7fff == 0)
                .count(),
            4 => body
                .chunks_exact(4)
                .filter(|c| u32::from_le_bytes((*c).try_into().expect("4 bytes")) << 1 == 0)
                .count(),
            _ => body
                .chunks_exact(8)
                .filter(|c| u64::from_le_bytes((*c).try_into().expect("8 bytes")) << 1 == 0)
                .count(),
        } as u64;
        for &b in rest {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        self.phase += 1;
        self.acc |= if self.phase == self.unit { b & 0x7f } else { b };
        if self.phase == self.unit {
            self.count += u64::from(self.acc == 0);
            self.phase = 0;
            self.acc = 0;
        }
    }
}

/// Largest fraction of a tensor that zero runs may fill for the judgement to call one an
/// error: a tensor mostly of zeros (an identity, a mask-like or padded weight) is
/// structured, not damaged.
const MAX_RUN_SHARE: u64 = 2;

/// What a tensor's zero runs are judged to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZeroJudgement {
    /// The run shown (absolute file offsets).
    pub start: u64,
    /// Its end.
    pub end: u64,
    /// True when the run cannot be legitimate data.
    pub error: bool,
    /// Why, as the end of the finding's sentence after "N zero bytes at a..b inside
    /// <tensor>" ("start mid-row (row 2, byte 8 of 256) and the tensor has no other zero
    /// element: data lost by the storage").
    pub why: String,
}

/// The content checks of one tensor (or storage): zero runs, and NaN/Inf when asked.
#[derive(Clone, Debug)]
pub struct TensorScan {
    /// Element type, when known.
    pub dtype: Option<TensorDtype>,
    /// Zero runs.
    pub zeros: ZeroRuns,
    /// Zero elements (float types only).
    pub zero_elements: ZeroElements,
    /// Shape and row lengths, when known.
    pub geometry: Option<Geometry>,
    /// Absolute offset of the tensor's first byte.
    pub start: u64,
    /// Bytes read.
    pub len: u64,
    /// What must be added to the offsets to make them file offsets (the start of a
    /// safetensors blob inside a DCP file): 4 KiB blocks are the file's.
    pub file_base: u64,
    /// NaN/Inf counts (with `--scan-values`, float types only).
    pub values: Option<ValueScan>,
}

impl TensorScan {
    /// A scan of the tensor bytes starting at absolute offset `start`.
    pub fn new(start: u64, dtype: Option<TensorDtype>, scan_values: bool) -> Self {
        Self {
            dtype,
            zeros: ZeroRuns::new(start),
            zero_elements: ZeroElements::new(dtype),
            geometry: None,
            start,
            len: 0,
            file_base: 0,
            values: dtype.filter(|_| scan_values).and_then(ValueScan::new),
        }
    }

    /// The same scan, told the tensor's shape (`contiguous`: C order, as in safetensors;
    /// otherwise the strides are unknown and every dimension may be the innermost one).
    pub fn with_shape(mut self, shape: &[u64], contiguous: bool) -> Self {
        self.geometry = self.dtype.and_then(|d| Geometry::new(shape, d, contiguous));
        self
    }

    /// The same scan, its offsets `base` bytes into the file.
    pub fn at_file_offset(mut self, base: u64) -> Self {
        self.file_base = base;
        self
    }

    /// The next bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.zeros.update(data);
        self.zero_elements.update(data);
        self.len += data.len() as u64;
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

    /// The judgement of the zero runs, `None` when there is nothing to report.
    ///
    /// A legitimately zero stretch of a tensor follows its layout: whole rows (the
    /// padding row of an embedding, pruned output channels, rows added for new tokens),
    /// a column range repeated in every row (pruned or zero-initialised input features),
    /// or scattered zeros (ReLU-sparse, pruned weights), which leave zero elements
    /// elsewhere. Data lost by the storage follows the file: whole 4 KiB blocks, wherever
    /// they fall in the rows. So one run is an **error** when, with the tensor's shape
    /// known (two or more rows), every run of the tensor known (at most
    /// [`KEPT_RUNS`]) and the runs filling at most half of it:
    ///
    /// - it starts or ends mid-row (for every row length the layout allows; the run
    ///   trimmed to the whole elements it covers), and no other
    ///   run starts or ends at the same place in its row (not a column pattern), and
    /// - either the tensor has no zero element outside its runs (then even the few zero
    ///   elements at the run's ends that are not whole rows cannot be chance zeros next
    ///   to a zero row), or the run is whole 4 KiB blocks of the file (starts and ends on
    ///   a block boundary) while mid-row.
    ///
    /// Everything else (whole zero rows, a tensor with other zero elements, a vector, a
    /// storage whose tensor's shape is not known) stays the warning it has always been.
    pub fn zero_judgement(&self) -> Option<ZeroJudgement> {
        if !self.suspicious_zeros() {
            return None;
        }
        let &(s0, e0) = self.zeros.runs.first()?;
        let generic = "whose other bytes are not zero: the mark of data lost by the storage (or a legitimately zero row)".to_string();
        let Some(geo) = &self.geometry else {
            return Some(ZeroJudgement::warning(s0, e0, generic));
        };
        let runs = &self.zeros.runs;
        if self.zeros.count > runs.len() as u64 || geo.rows.iter().any(|&r| self.len < 2 * r) {
            return Some(ZeroJudgement::warning(s0, e0, generic));
        }
        let rows = Rows {
            start: self.start,
            unit: self.zero_elements.unit().max(1),
            rows: &geo.rows,
        };
        let Some(&run) = runs.iter().find(|&run| {
            let (cs, ce) = rows.core(run);
            rows.mid(cs) || rows.mid(ce)
        }) else {
            return Some(rows.whole_rows(s0, e0));
        };
        Some(self.mid_row(&rows, run))
    }

    /// The judgement of the run `(s, e)` that starts or ends mid-row: an error unless
    /// another run shares its place in the row, the runs fill most of the tensor, or
    /// other zero elements explain it (and it is not cut to file blocks).
    fn mid_row(&self, rows: &Rows<'_>, (s, e): (u64, u64)) -> ZeroJudgement {
        let runs = &self.zeros.runs;
        let (cs, ce) = rows.core(&(s, e));
        let place = rows.place(cs, ce);
        let repeated = runs.iter().filter(|&&run| run != (s, e)).any(|run| {
            let (cs1, ce1) = rows.core(run);
            rows.rows.iter().any(|&r| {
                (rows.mid(cs) && rows.rel(cs1) % r == rows.rel(cs) % r)
                    || (rows.mid(ce) && rows.rel(ce1) % r == rows.rel(ce) % r)
            })
        });
        if repeated {
            return ZeroJudgement::warning(
                s,
                e,
                format!(
                    "{place}, and another run of the tensor starts or ends at the same place in its row: a column pattern (zero-initialised or pruned features), or data lost by the storage"
                ),
            );
        }
        let run_bytes: u64 = runs.iter().map(|&(a, b)| b - a).sum();
        if run_bytes.saturating_mul(MAX_RUN_SHARE) > self.len {
            return ZeroJudgement::warning(
                s,
                e,
                format!(
                    "{place}; zero runs fill {run_bytes} of the tensor's {} bytes, mostly zero, which a structured tensor can be",
                    self.len
                ),
            );
        }
        let unit = rows.unit;
        let inside: u64 = runs
            .iter()
            .map(|run| {
                let (a, b) = rows.core(run);
                b.saturating_sub(a) / unit
            })
            .sum();
        let others = self.zero_elements.count.saturating_sub(inside);
        // Whole 4 KiB blocks of the file, give or take the zero bytes of an element at
        // either end.
        let (fs, fe) = (s + self.file_base, e + self.file_base);
        let (b1, b2) = (
            fs.next_multiple_of(MIN_ZERO_RUN),
            fe / MIN_ZERO_RUN * MIN_ZERO_RUN,
        );
        let blocks = b2 > b1 && b1 - fs < unit && fe - b2 < unit;
        if others == 0 {
            ZeroJudgement {
                start: s,
                end: e,
                error: true,
                why: format!(
                    "{place} and the tensor has no other zero element: data lost by the storage"
                ),
            }
        } else if blocks {
            ZeroJudgement {
                start: s,
                end: e,
                error: true,
                why: format!(
                    "{place} and are whole 4 KiB blocks of the file: data lost by the storage (the tensor's {others} other zero element(s) do not explain a run cut to file blocks)"
                ),
            }
        } else {
            ZeroJudgement::warning(
                s,
                e,
                format!(
                    "{place}, but the tensor has {others} other zero element(s), as sparse or pruned weights do: data lost by the storage, or legitimately zero"
                ),
            )
        }
    }
}

impl ZeroJudgement {
    fn warning(start: u64, end: u64, why: String) -> Self {
        Self {
            start,
            end,
            error: false,
            why,
        }
    }
}

/// Positions in a tensor's rows: offsets relative to its first byte (`start`), runs
/// trimmed to whole elements of `unit` bytes, and the candidate row lengths.
struct Rows<'a> {
    start: u64,
    unit: u64,
    rows: &'a [u64],
}

impl Rows<'_> {
    /// `o` relative to the tensor's first byte.
    fn rel(&self, o: u64) -> u64 {
        o - self.start
    }

    /// A run trimmed to the whole elements it covers: the zero low-order bytes of a
    /// neighbouring element (one in 256 for a float's last mantissa byte) say nothing.
    fn core(&self, &(a, b): &(u64, u64)) -> (u64, u64) {
        let unit = self.unit;
        (
            self.start + self.rel(a).div_ceil(unit) * unit,
            self.start + self.rel(b) / unit * unit,
        )
    }

    /// Whether `o` is mid-row for every candidate row length.
    fn mid(&self, o: u64) -> bool {
        self.rows.iter().all(|&r| !self.rel(o).is_multiple_of(r))
    }

    /// Where a run trimmed to `cs..ce` starts or ends mid-row, in words.
    fn place(&self, cs: u64, ce: u64) -> String {
        let row = self.rows[0];
        let at = |o: u64| {
            format!(
                "row {}, byte {} of {row}",
                self.rel(o) / row,
                self.rel(o) % row
            )
        };
        match (self.mid(cs), self.mid(ce)) {
            (true, true) => format!("start mid-row ({}) and end mid-row ({})", at(cs), at(ce)),
            (true, false) => format!("start mid-row ({})", at(cs)),
            _ => format!("end mid-row ({})", at(ce)),
        }
    }

    /// The warning for a first run `(s0, e0)` of whole rows (no run is mid-row).
    fn whole_rows(&self, s0: u64, e0: u64) -> ZeroJudgement {
        let (c0, c1) = self.core(&(s0, e0));
        let aligned = |&r: &u64| self.rel(c0).is_multiple_of(r) && self.rel(c1).is_multiple_of(r);
        let r = self
            .rows
            .iter()
            .copied()
            .find(aligned)
            .unwrap_or(self.rows[0]);
        ZeroJudgement::warning(
            s0,
            e0,
            format!(
                "covering whole rows {}..{} of {r} bytes: a zero row is legitimate (an embedding's padding row, a pruned unit), or data lost by the storage",
                self.rel(c0) / r,
                self.rel(c1) / r
            ),
        )
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

    /// `rows` × `cols` F32 values, none zero, little-endian.
    fn dense(rows: usize, cols: usize) -> Vec<u8> {
        (0..rows * cols)
            .flat_map(|i| {
                let v = (i % 977 + 1) as f32 * if i % 3 == 0 { -0.001 } else { 0.002 };
                v.to_le_bytes()
            })
            .collect()
    }

    /// The judgement of `data`, a tensor of `dtype` and `shape` at file offset `start`,
    /// fed in pieces of every size tried (which must agree).
    fn judge(
        data: &[u8],
        start: u64,
        dtype: TensorDtype,
        shape: &[u64],
        contiguous: bool,
    ) -> Option<ZeroJudgement> {
        let mut out = None;
        for piece in [1, 7, 4096, 1 << 20] {
            let mut scan = TensorScan::new(start, Some(dtype), false).with_shape(shape, contiguous);
            for chunk in data.chunks(piece) {
                scan.update(chunk);
            }
            scan.finish();
            let j = scan.zero_judgement();
            if piece > 1 {
                assert_eq!(j, out, "piece {piece}");
            }
            out = j;
        }
        out
    }

    #[test]
    fn zero_elements_count_both_zeros_across_pieces() {
        let mut data = dense(1, 100);
        data[8..12].copy_from_slice(&0f32.to_le_bytes());
        data[20..24].copy_from_slice(&(-0f32).to_le_bytes());
        for piece in [1, 3, 5, 400] {
            let mut z = ZeroElements::new(Some(TensorDtype::F32));
            data.chunks(piece).for_each(|c| z.update(c));
            assert_eq!(z.count, 2, "piece {piece}");
        }
        let mut z = ZeroElements::new(Some(TensorDtype::Bf16));
        z.update(&[0, 0x80, 0, 0, 0, 0x3f, 0x80, 0]);
        assert_eq!(z.count, 2, "-0, +0; 0x3f00 and 0x0080 are not zero");
        let mut z = ZeroElements::new(Some(TensorDtype::I32));
        z.update(&[0; 64]);
        assert_eq!(z.count, 0, "integers are not counted");
    }

    #[test]
    fn mid_row_run_in_a_dense_tensor_is_an_error() {
        // The shape of the real case: F32 [384, 384] (rows of 1,536 bytes), no zero
        // element, 4,096 zeros starting 1,512 bytes into row 345.
        let start = 11_416 + 49_457_152;
        let mut data = dense(384, 384);
        let at = 50_000_000 - start;
        data[at..at + 4096].fill(0);
        let j = judge(&data, start as u64, TensorDtype::F32, &[384, 384], true).unwrap();
        assert!(j.error, "{j:?}");
        assert_eq!((j.start, j.end), (50_000_000, 50_004_096));
        assert_eq!(
            j.why,
            "start mid-row (row 345, byte 1512 of 1536) and end mid-row (row 348, byte 1000 of 1536) and the tensor has no other zero element: data lost by the storage"
        );
        // Unknown strides (a torch storage): [384, 384] has one row length, same verdict.
        assert!(
            judge(&data, start as u64, TensorDtype::F32, &[384, 384], false)
                .unwrap()
                .error
        );
    }

    #[test]
    fn whole_zero_rows_of_an_embedding_are_not_an_error() {
        // Rows of 4 KiB; row 3 zero (a padding row), and rows 6..9.
        let mut data = dense(16, 1024);
        data[3 * 4096..4 * 4096].fill(0);
        data[6 * 4096..9 * 4096].fill(0);
        let j = judge(&data, 100, TensorDtype::F32, &[16, 1024], true).unwrap();
        assert!(!j.error, "{j:?}");
        assert_eq!((j.start, j.end), (100 + 3 * 4096, 100 + 4 * 4096));
        assert!(
            j.why.starts_with("covering whole rows 3..4 of 4096 bytes"),
            "{}",
            j.why
        );
        // The low byte of the next row's first value happens to be zero (one float in
        // 256): the byte run ends 1 byte into row 4, the elements it covers do not.
        let mut low = data.clone();
        low[4 * 4096] = 0;
        let j = judge(&low, 100, TensorDtype::F32, &[16, 1024], true).unwrap();
        assert!(
            !j.error && j.why.starts_with("covering whole rows 3..4"),
            "{j:?}"
        );
        assert_eq!((j.start, j.end), (100 + 3 * 4096, 100 + 4 * 4096 + 1));
        // The same with a chance zero element next to the row, in a tensor that has
        // zero elements elsewhere: the run starts mid-row, a warning.
        data[3 * 4096 - 4..3 * 4096].fill(0);
        data[40..44].fill(0);
        let j = judge(&data, 100, TensorDtype::F32, &[16, 1024], true).unwrap();
        assert!(!j.error && j.why.contains("1 other zero element"), "{j:?}");
    }

    #[test]
    fn all_zero_integer_and_mask_tensors_have_no_finding() {
        let zeros = vec![0u8; 64 * 1024];
        assert_eq!(judge(&zeros, 0, TensorDtype::F32, &[16, 1024], true), None);
        let mut ints = vec![1u8; 64 * 1024];
        ints[1000..9000].fill(0);
        for dtype in [
            TensorDtype::I32,
            TensorDtype::U8,
            TensorDtype::Bool,
            TensorDtype::F8E8M0,
        ] {
            assert_eq!(judge(&ints, 0, dtype, &[16, 1024], true), None, "{dtype:?}");
        }
    }

    #[test]
    fn a_tensor_with_other_zero_elements_stays_a_warning() {
        // ReLU-sparse or pruned weights: zero elements elsewhere.
        let mut data = dense(64, 384);
        data[5000..9096].fill(0);
        data[20_000..20_004].fill(0);
        let j = judge(&data, 0, TensorDtype::F32, &[64, 384], true).unwrap();
        assert!(!j.error, "{j:?}");
        assert_eq!(
            j.why,
            "start mid-row (row 3, byte 392 of 1536) and end mid-row (row 5, byte 1416 of 1536), but the tensor has 1 other zero element(s), as sparse or pruned weights do: data lost by the storage, or legitimately zero"
        );
        // The same run cut to 4 KiB blocks of the file is an error all the same.
        let mut data = dense(64, 384);
        data[8192..12_288].fill(0);
        data[20_000..20_004].fill(0);
        let j = judge(&data, 0, TensorDtype::F32, &[64, 384], true).unwrap();
        assert!(j.error && j.why.contains("whole 4 KiB blocks"), "{j:?}");
        // ... of the file, not of the tensor.
        let mut scan = TensorScan::new(0, Some(TensorDtype::F32), false)
            .with_shape(&[64, 384], true)
            .at_file_offset(100);
        scan.update(&data);
        scan.finish();
        assert!(!scan.zero_judgement().unwrap().error);
    }

    #[test]
    fn structured_zeros_stay_warnings() {
        // A column range zero in every row (zero-initialised input features).
        let mut data = dense(4, 2048);
        for row in 0..4 {
            data[row * 8192 + 1024..row * 8192 + 6144].fill(0);
        }
        let j = judge(&data, 0, TensorDtype::F32, &[4, 2048], true).unwrap();
        assert!(!j.error && j.why.contains("column pattern"), "{j:?}");
        // An identity: mostly zeros.
        let mut eye = vec![0u8; 4 * 2048 * 4];
        for i in 0..4 {
            eye[(i * 2048 + i) * 4..][..4].copy_from_slice(&1f32.to_le_bytes());
        }
        let j = judge(&eye, 0, TensorDtype::F32, &[4, 2048], true).unwrap();
        assert!(!j.error && j.why.contains("mostly zero"), "{j:?}");
        // A vector (one row): a zero segment, such as the k part of a fused qkv bias.
        let mut bias = dense(1, 3840);
        bias[5120..10_240].fill(0);
        for shape in [&[3840][..], &[1, 3840], &[3840, 1]] {
            let j = judge(&bias, 0, TensorDtype::F32, shape, true).unwrap();
            assert!(!j.error, "{shape:?}: {j:?}");
        }
        // A storage of unknown strides: a zero row of the transposed layout is whole rows
        // for one of the lengths the shape allows.
        let mut t = dense(2048, 8);
        t[4096..12_288].fill(0);
        assert!(
            !judge(&t, 0, TensorDtype::F32, &[8, 2048], false)
                .unwrap()
                .error
        );
        assert!(
            judge(&t, 0, TensorDtype::F32, &[8, 2048], true)
                .unwrap()
                .error
        );
        // Without a shape: today's warning.
        let mut scan = TensorScan::new(0, Some(TensorDtype::F32), false);
        scan.update(&t);
        scan.finish();
        let j = scan.zero_judgement().unwrap();
        assert!(
            !j.error && j.why.contains("or a legitimately zero row"),
            "{j:?}"
        );
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
