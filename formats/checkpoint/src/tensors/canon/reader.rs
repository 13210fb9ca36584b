//! The reader of a tensor's canonical form: runs gathered in row-major order into one
//! buffer, a block at a time (or band by band for a large strided view, or as raw bytes
//! for packed sub-byte elements).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use super::band;
use super::prepare::{Prepared, prepare};
use crate::Error;
use crate::tensors::model::{Tensor, contiguous};

/// Most bytes produced per refill, and the block size callers read with.
pub const BLOCK: usize = 1 << 20;
/// Largest storage range of one strided piece gathered from memory; a larger one is
/// read band by band.
pub const GATHER_LIMIT: u64 = 64 << 20;
/// Most bytes of one band of a large strided view.
const BAND: u64 = 64 << 20;

/// A reader of a tensor's canonical form ([`Read`]).
pub struct Canonical<'a> {
    tensor: &'a Tensor,
    files: Vec<File>,
    esize: u64,
    shape: Vec<u64>,
    pieces: Vec<Prepared>,
    idx: Vec<u64>,
    remaining: u64,
    last: usize,
    /// Sub-byte types: the one contiguous byte range, `(file, at, left)`.
    raw: Option<(usize, u64, u64)>,
    /// A large strided view read in bands: `(next row of dimension 0, rows per band)`.
    pub(super) band: Option<(u64, u64)>,
    /// Allocated once (at most a block and one element), never shrunk or re-zeroed.
    buf: Vec<u8>,
    /// Bytes of `buf` holding produced data.
    len: usize,
    pos: usize,
    /// Bytes of the canonical form in all, and produced so far: a reader that runs dry
    /// before the end is an error, never a short (and falsely equal) stream.
    expected: u64,
    produced: u64,
    /// Storage bytes strided pieces may hold gathered at once.
    gather_budget: u64,
}

impl Tensor {
    /// A reader of the canonical form.
    pub fn canonical(&self) -> Result<Canonical<'_>, Error> {
        Canonical::new(self)
    }
}

impl<'a> Canonical<'a> {
    pub(super) fn new(tensor: &'a Tensor) -> Result<Self, Error> {
        Self::with_gather_limit(tensor, GATHER_LIMIT)
    }

    /// [`Self::new`] gathering strided views of at most `gather_limit` storage bytes
    /// from memory (the tests lower it to reach the band reading with small files).
    pub(super) fn with_gather_limit(tensor: &'a Tensor, gather_limit: u64) -> Result<Self, Error> {
        let bad = |why: String| Error::Malformed {
            path: tensor.file.clone(),
            reason: format!("tensor `{}`: {why}", tensor.name),
        };
        let numel = tensor
            .numel()
            .ok_or_else(|| bad("its shape has more than 2^64 elements".into()))?;
        let bits = tensor.dtype.bits();
        let esize = tensor.dtype.size();
        let (files, pieces) = prepare(tensor, &bad)?;
        let mut reader = Canonical {
            tensor,
            files,
            esize,
            shape: tensor.shape.clone(),
            pieces,
            idx: Vec::new(),
            remaining: numel,
            last: 0,
            raw: None,
            band: None,
            // A small tensor gets a small buffer: no megabyte per tensor.
            buf: vec![0; tensor.bytes().unwrap_or(0).min(BLOCK as u64) as usize + esize as usize],
            len: 0,
            pos: 0,
            expected: tensor.bytes().unwrap_or(0),
            produced: 0,
            gather_budget: gather_limit,
        };
        if !bits.is_multiple_of(8) {
            // Packed sub-byte elements: only a plain contiguous tensor is readable.
            let plain = match &reader.pieces[..] {
                [p] => p.offset == 0 && p.stride == contiguous(&p.shape),
                _ => false,
            };
            if !plain {
                return Err(bad(
                    "a strided or chunked tensor of packed sub-byte elements".into(),
                ));
            }
            let bytes = tensor.bytes().unwrap_or(0);
            reader.raw = Some((0, reader.pieces[0].base, bytes));
            reader.remaining = 0;
            return Ok(reader);
        }
        reader.collapse();
        reader.idx = vec![0; reader.shape.len()];
        reader.plan_bands(gather_limit);
        Ok(reader)
    }

    /// A single strided piece spanning more storage than [`GATHER_LIMIT`] is read band
    /// by band ([`band::fill`]), when one row of its first dimension fits a band.
    fn plan_bands(&mut self, gather_limit: u64) {
        let [p] = &self.pieces[..] else { return };
        let n = p.shape.len();
        let whole = p.shape == self.shape && p.at.iter().all(|&a| a == 0);
        if !whole || p.stride[n - 1] == 1 || n < 2 || p.shape.contains(&0) {
            return;
        }
        let span = p
            .shape
            .iter()
            .zip(&p.stride)
            .map(|(&s, &st)| (s - 1) * st)
            .sum::<u64>()
            + 1;
        let row = p.shape[1..].iter().product::<u64>() * self.esize;
        if span * self.esize <= gather_limit || row > BAND {
            return;
        }
        // Bands of about a sixteenth of the gather limit's rows (at least one row).
        let rows = ((gather_limit.min(BAND) / 16) / row).clamp(1, p.shape[0]);
        self.band = Some((0, rows));
        self.buf = vec![0; (rows * row) as usize];
    }

    /// Makes a 0-dim tensor 1-dim, gives dimensions of extent 1 the stride that lets
    /// them merge, and merges every dimension into the one before it where all pieces
    /// hold it whole and contiguously.
    fn collapse(&mut self) {
        if self.shape.is_empty() {
            self.shape.push(1);
            for p in &mut self.pieces {
                p.shape.push(1);
                p.stride.push(1);
                p.at.push(0);
            }
        }
        for p in &mut self.pieces {
            for k in (0..p.shape.len()).rev() {
                if p.shape[k] == 1 {
                    p.stride[k] = match k + 1 < p.shape.len() {
                        true => p.stride[k + 1].saturating_mul(p.shape[k + 1]),
                        false => 1,
                    };
                }
            }
        }
        let mut k = self.shape.len() - 1;
        while k > 0 {
            let inner = self.shape[k];
            let mergeable = self.pieces.iter().all(|p| {
                p.shape[k] == inner
                    && p.at[k] == 0
                    && p.stride[k - 1] == p.stride[k].saturating_mul(p.shape[k])
            });
            if mergeable {
                self.shape[k - 1] = self.shape[k - 1].saturating_mul(inner);
                self.shape.remove(k);
                for p in &mut self.pieces {
                    p.shape[k - 1] = p.shape[k - 1].saturating_mul(p.shape[k]);
                    p.stride[k - 1] = p.stride[k];
                    p.at[k - 1] = p.at[k - 1].saturating_mul(inner);
                    p.shape.remove(k);
                    p.stride.remove(k);
                    p.at.remove(k);
                }
            }
            k -= 1;
        }
    }

    fn covers(&self, piece: usize) -> bool {
        let Some(p) = self.pieces.get(piece) else {
            return false;
        };
        self.idx
            .iter()
            .zip(&p.at)
            .zip(&p.shape)
            .all(|((&i, &a), &s)| i >= a && i - a < s)
    }

    /// Appends the next run (at most `room` elements) to `buf`; returns its elements.
    fn run(&mut self, room: u64) -> io::Result<u64> {
        if !self.covers(self.last) {
            // Chunks are met in order along a row: the next one first, then a scan.
            let next = self.last + 1;
            self.last = std::iter::once(next)
                .chain(0..self.pieces.len())
                .find(|&i| self.covers(i))
                .ok_or_else(|| {
                    // The element's index in the tensor's own shape, from its position.
                    let mut at = self.tensor.numel().unwrap_or(0) - self.remaining;
                    let mut index = vec![0u64; self.tensor.shape.len()];
                    for (i, &d) in self.tensor.shape.iter().enumerate().rev() {
                        index[i] = at % d.max(1);
                        at /= d.max(1);
                    }
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "element {index:?} is in no chunk (`shardsmith verify` names the chunks missing)"
                        ),
                    )
                })?;
        }
        let n = self.shape.len();
        let esize = self.esize;
        let piece = &mut self.pieces[self.last];
        let local: Vec<u64> = self.idx.iter().zip(&piece.at).map(|(i, a)| i - a).collect();
        let run = (piece.shape[n - 1] - local[n - 1]).min(room.max(1));
        let first = piece.offset
            + local
                .iter()
                .zip(&piece.stride)
                .map(|(l, s)| l * s)
                .sum::<u64>();
        let step = piece.stride[n - 1];
        let start = self.len;
        self.len += (run * esize) as usize;
        let out = &mut self.buf[start..self.len];
        let file = &self.files[piece.file];
        if step == 1 || run == 1 {
            file.read_exact_at(out, piece.base + first * esize)?;
        } else {
            if piece.gathered.is_none() {
                let lo = piece.offset;
                let hi = piece
                    .shape
                    .iter()
                    .zip(&piece.stride)
                    .fold(piece.offset, |a, (&s, &st)| a + (s - 1) * st)
                    + 1;
                // Gathered spans of all pieces share one budget: past it, element reads.
                let bytes = (hi - lo) * esize;
                if bytes <= self.gather_budget {
                    self.gather_budget -= bytes;
                    let mut span = vec![0u8; bytes as usize];
                    file.read_exact_at(&mut span, piece.base + lo * esize)?;
                    piece.gathered = Some((lo, span));
                }
            }
            let e = esize as usize;
            for j in 0..run {
                let at = first + j * step;
                let dst = &mut out[j as usize * e..(j as usize + 1) * e];
                match &piece.gathered {
                    Some((lo, span)) => {
                        let from = ((at - lo) * esize) as usize;
                        dst.copy_from_slice(&span[from..from + e]);
                    }
                    None => file.read_exact_at(dst, piece.base + at * esize)?,
                }
            }
        }
        // Advance the row-major index by `run` along the innermost dimension.
        self.idx[n - 1] += run;
        let mut k = n - 1;
        while k > 0 && self.idx[k] == self.shape[k] {
            self.idx[k] = 0;
            self.idx[k - 1] += 1;
            k -= 1;
        }
        Ok(run)
    }

    fn refill(&mut self) -> io::Result<()> {
        self.len = 0;
        self.pos = 0;
        if let Some((file, at, left)) = self.raw {
            let n = left.min(BLOCK as u64);
            self.len = n as usize;
            self.files[file].read_exact_at(&mut self.buf[..self.len], at)?;
            self.raw = Some((file, at + n, left - n));
            return Ok(());
        }
        if let Some((first, per_band)) = self.band {
            let p = &self.pieces[0];
            let rows = per_band.min(p.shape[0] - first);
            if rows == 0 {
                return Ok(());
            }
            let inner: u64 = p.shape[1..].iter().product();
            self.len = (rows * inner * self.esize) as usize;
            let view = band::View {
                file: &self.files[p.file],
                base: p.base,
                offset: p.offset,
                shape: &p.shape,
                stride: &p.stride,
                esize: self.esize,
            };
            band::fill(&view, first, rows, &mut self.buf[..self.len])?;
            self.band = Some((first + rows, per_band));
            self.remaining -= rows * inner;
            return Ok(());
        }
        while self.remaining > 0 && (self.len as u64) < BLOCK as u64 {
            let room = (BLOCK as u64 - self.len as u64) / self.esize;
            let done = self.run(room.min(self.remaining))?;
            self.remaining -= done;
        }
        Ok(())
    }

    /// The next bytes of the canonical form, without a copy: the rest of the current
    /// block, or the next block (empty at the end). Call [`Self::consume`] with what
    /// was used.
    pub fn next_chunk(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len {
            self.refill()?;
            self.produced += self.len as u64;
            if (self.len == 0 && self.produced < self.expected) || self.produced > self.expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "its pieces gave {} of its {} bytes (a chunk missing from .metadata?)",
                        self.produced, self.expected
                    ),
                ));
            }
        }
        Ok(&self.buf[self.pos..self.len])
    }

    /// Marks `n` bytes of the chunk [`Self::next_chunk`] gave as read.
    pub fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }

    /// The tensor being read.
    pub fn tensor(&self) -> &Tensor {
        self.tensor
    }
}

impl Read for Canonical<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let chunk = self.next_chunk()?;
        let n = out.len().min(chunk.len());
        out[..n].copy_from_slice(&chunk[..n]);
        self.consume(n);
        Ok(n)
    }
}
