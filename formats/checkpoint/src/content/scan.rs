//! The content checks of one tensor and the judgement of its zero runs.

use super::zeros::{Geometry, MIN_ZERO_RUN, ZeroElements, ZeroRuns};
use crate::values::{TensorDtype, ValueScan};

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
