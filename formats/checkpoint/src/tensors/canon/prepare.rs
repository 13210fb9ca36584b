//! The pieces of a tensor checked and opened before the canonical form is read: each
//! within the tensor's shape and its storage (repeats bounded), each storage within its
//! file, each file opened once.

use std::fs::File;
use std::path::PathBuf;

use crate::Error;
use crate::tensors::model::{Piece, Tensor};

/// Most times a view may repeat its storage's bytes (strides of 0).
const MAX_REPEAT: u64 = 1 << 16;
/// Most bytes a view may read beyond its storage's by repeating elements (strides of 0
/// or overlapping): an `expand` of a few elements is fine, terabytes are refused.
const MAX_REPEATED_BYTES: u64 = 1 << 30;

/// A piece, dimensions collapsed, ready to read.
pub(super) struct Prepared {
    pub(super) file: usize,
    pub(super) base: u64,
    pub(super) offset: u64,
    pub(super) shape: Vec<u64>,
    pub(super) stride: Vec<u64>,
    pub(super) at: Vec<u64>,
    /// The storage bytes a strided piece spans, `(first byte, bytes)`, once loaded.
    pub(super) gathered: Option<(u64, Vec<u8>)>,
}

/// The pieces of `tensor`, checked, and the files they are read from (each opened
/// once); `bad` words a problem of the tensor.
pub(super) fn prepare(
    tensor: &Tensor,
    bad: &dyn Fn(String) -> Error,
) -> Result<(Vec<File>, Vec<Prepared>), Error> {
    let mut files = Files::default();
    let mut pieces = Vec::new();
    for (i, piece) in tensor.pieces.iter().enumerate() {
        if let Some(why) = view_problem(tensor, i, piece) {
            return Err(bad(why));
        }
        let file = files.open(piece)?;
        // Every piece, not only the first of its file, lies inside the file.
        let size = files.sizes[file];
        if piece
            .base
            .checked_add(piece.len)
            .is_none_or(|end| end > size)
        {
            return Err(Error::malformed(
                &piece.path,
                format!(
                    "tensor `{}`: its storage at bytes {}..+{} is past the end of the {size}-byte file",
                    tensor.name, piece.base, piece.len
                ),
            ));
        }
        pieces.push(Prepared {
            file,
            base: piece.base,
            offset: piece.offset,
            shape: piece.shape.clone(),
            stride: piece.stride.clone(),
            at: piece.at.clone(),
            gathered: None,
        });
    }
    Ok((files.files, pieces))
}

/// Why piece `i` of `tensor` is no view torch reads: another rank, past the tensor's
/// shape, repeating its storage without bound, or past its storage.
fn view_problem(tensor: &Tensor, i: usize, piece: &Piece) -> Option<String> {
    let bits = tensor.dtype.bits();
    let esize = tensor.dtype.size();
    let rank = tensor.shape.len();
    if piece.shape.len() != rank || piece.stride.len() != rank || piece.at.len() != rank {
        return Some(format!("piece {i} has another rank than the tensor"));
    }
    for k in 0..rank {
        if piece.at[k]
            .checked_add(piece.shape[k])
            .is_none_or(|e| e > tensor.shape[k])
        {
            return Some(format!(
                "piece {i} (at {:?}, shape {:?}) reaches past the shape {:?}",
                piece.at, piece.shape, tensor.shape
            ));
        }
    }
    // The view must lie inside its storage: (offset + Σ(size−1)·stride + 1)·esize.
    let empty = piece.shape.contains(&0);
    let last = piece
        .shape
        .iter()
        .zip(&piece.stride)
        .try_fold(piece.offset, |a, (&s, &st)| {
            a.checked_add(s.saturating_sub(1).checked_mul(st)?)
        });
    let need = last
        .and_then(|l| l.checked_add(1))
        .and_then(|n| n.checked_mul(bits))
        .map(|b| b.div_ceil(8));
    // Views may repeat elements (a stride of 0: `expand`), but not without bound:
    // the canonical form of a hostile header could otherwise be petabytes.
    let logical = piece.shape.iter().try_fold(esize, |n, &d| n.checked_mul(d));
    let repeated = logical.map(|l| l.saturating_sub(piece.len));
    if logical.is_none_or(|l| l > piece.len.max(1).saturating_mul(MAX_REPEAT))
        || repeated.is_some_and(|r| r > MAX_REPEATED_BYTES)
    {
        return Some(format!(
            "its view (shape {:?}, stride {:?}) repeats the {} bytes of its storage into more than {MAX_REPEAT} times as many, or more than {} GiB beyond them",
            piece.shape,
            piece.stride,
            piece.len,
            MAX_REPEATED_BYTES >> 30
        ));
    }
    if !empty && need.is_none_or(|n| n > piece.len) {
        return Some(format!(
            "its view (offset {}, shape {:?}, stride {:?}) needs more than the {} bytes of its storage",
            piece.offset, piece.shape, piece.stride, piece.len
        ));
    }
    None
}

/// The files pieces are read from, each opened once (by path and encoded offset).
#[derive(Default)]
struct Files {
    sources: Vec<(PathBuf, Option<u64>)>,
    sizes: Vec<u64>,
    files: Vec<File>,
}

impl Files {
    /// The index of the file `piece` is read from, opened if it was not yet.
    fn open(&mut self, piece: &Piece) -> Result<usize, Error> {
        let source = (piece.path.clone(), piece.encoded.as_ref().map(|e| e.offset));
        if let Some(f) = self.sources.iter().position(|p| *p == source) {
            return Ok(f);
        }
        let f = piece.open()?;
        let size = f.metadata().map_err(|e| Error::io(&piece.path, e))?.len();
        self.sources.push(source);
        self.sizes.push(size);
        self.files.push(f);
        Ok(self.files.len() - 1)
    }
}
