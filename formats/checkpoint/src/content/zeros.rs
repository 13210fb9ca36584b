//! Runs of zero bytes and zero elements inside tensor data, and the tensor's geometry
//! that tells a row from a run.

use crate::values::TensorDtype;

/// Shortest run of zero bytes reported inside float tensor data: one filesystem block.
pub const MIN_ZERO_RUN: u64 = 4096;
/// Zero runs kept per tensor (more are counted); the zero-run judgement needs them all.
pub const KEPT_RUNS: usize = 16;

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
