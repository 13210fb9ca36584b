//! A strided view too large to gather whole, read a band of its outermost dimension at
//! a time: for each index of the other dimensions, the band's elements along the first
//! one (one positioned read when that stride is 1, as for a transposed matrix), placed
//! at their row-major positions. Memory is one band; the storage is read once.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A view of a storage in a file.
pub struct View<'a> {
    /// The file.
    pub file: &'a File,
    /// Byte offset of the storage's element 0.
    pub base: u64,
    /// First element of the view.
    pub offset: u64,
    /// Extents.
    pub shape: &'a [u64],
    /// Strides, in elements.
    pub stride: &'a [u64],
    /// Bytes per element.
    pub esize: u64,
}

/// Writes rows `first..first + rows` of dimension 0 of `view`, row-major, into `out`
/// (exactly their size).
pub fn fill(view: &View<'_>, first: u64, rows: u64, out: &mut [u8]) -> io::Result<()> {
    let e = view.esize as usize;
    let inner: u64 = view.shape[1..].iter().product();
    let mut run = vec![0u8; rows as usize * e];
    let mut other = vec![0u64; view.shape.len() - 1];
    for o in 0..inner {
        let at = view.offset
            + first * view.stride[0]
            + other
                .iter()
                .zip(&view.stride[1..])
                .map(|(i, s)| i * s)
                .sum::<u64>();
        if view.stride[0] == 1 || rows == 1 {
            view.file
                .read_exact_at(&mut run, view.base + at * view.esize)?;
        } else {
            for r in 0..rows as usize {
                let from = view.base + (at + r as u64 * view.stride[0]) * view.esize;
                view.file
                    .read_exact_at(&mut run[r * e..(r + 1) * e], from)?;
            }
        }
        for r in 0..rows as usize {
            let to = (r * inner as usize + o as usize) * e;
            out[to..to + e].copy_from_slice(&run[r * e..(r + 1) * e]);
        }
        // Next index of the other dimensions, row-major.
        for k in (0..other.len()).rev() {
            other[k] += 1;
            if other[k] < view.shape[k + 1] {
                break;
            }
            other[k] = 0;
        }
    }
    Ok(())
}
