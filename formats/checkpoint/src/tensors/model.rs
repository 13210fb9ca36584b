//! A tensor of a checkpoint as shardsmith reads it by content: its name, dtype, shape
//! and the pieces (strided views at places in files) its elements lie in.

use std::fs::File;
use std::path::PathBuf;

use crate::Error;
use crate::dcp::transform::{self, Transform};

use crate::values::TensorDtype;

/// One tensor of a checkpoint, wherever its elements lie.
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Name (`model.layers.0.weight`), as the checkpoint keys it.
    pub name: String,
    /// Element type.
    pub dtype: TensorDtype,
    /// Global shape (empty for a 0-dim tensor).
    pub shape: Vec<u64>,
    /// Where the elements are: one piece, or one per DCP chunk.
    pub pieces: Vec<Piece>,
    /// The file that holds it (the `.metadata` for DCP), relative to what was opened.
    pub file: String,
}

/// A value of a checkpoint that is not a tensor (a step count, a learning rate, a
/// string), as a loader returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Dotted name (`optimizer.param_groups.0.lr`), as the checkpoint keys it.
    pub name: String,
    /// The value, Python-like and short (`5`, `0.001`, `'adamw'`).
    pub shown: String,
    /// A digest of the whole value when it is known in full, so two entries compare.
    pub digest: Option<u64>,
    /// The file that holds it, relative to what was opened.
    pub file: String,
}

impl Entry {
    pub(super) fn of(e: crate::torch::Entry, file: &str) -> Self {
        Self {
            name: e.name,
            shown: e.shown,
            digest: e.digest,
            file: file.to_string(),
        }
    }
}

/// A checkpoint by content: its tensors, and the values beside them.
#[derive(Clone, Debug, Default)]
pub struct Checkpoint {
    /// Every tensor, sorted by name.
    pub tensors: Vec<Tensor>,
    /// Every value that is not a tensor (torch zip and legacy files), sorted by name.
    pub entries: Vec<Entry>,
}

/// A box of a tensor's elements stored as a strided view at a place in a file.
#[derive(Clone, Debug)]
pub struct Piece {
    /// The file holding the storage.
    pub path: PathBuf,
    /// Byte offset of the storage's first element in the file.
    pub base: u64,
    /// Bytes of the storage from `base` on (views must stay inside).
    pub len: u64,
    /// First element of the view in the storage.
    pub offset: u64,
    /// Extent in each dimension (the chunk's, for DCP).
    pub shape: Vec<u64>,
    /// Stride of each dimension, in elements.
    pub stride: Vec<u64>,
    /// Where the box starts in the global tensor, per dimension.
    pub at: Vec<u64>,
    /// When `path` holds the storage encoded (a DCP item saved through the ZStandard
    /// extension): the stored item, whose decoded bytes `base` and `len` are offsets in.
    pub encoded: Option<Encoded>,
}

/// A DCP item stored through transforms: a piece's storage is in the bytes it decodes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// First stored byte of the item in the file.
    pub offset: u64,
    /// Stored bytes of the item.
    pub length: u64,
    /// The transforms that decode it, in order.
    pub transforms: Vec<Transform>,
    /// Most bytes it may decode to (from `.metadata`).
    pub limit: u64,
}

impl Piece {
    /// The file holding the storage at `base`: `path` itself, or for an encoded piece
    /// its item decoded into an anonymous temporary file (deleted when closed).
    pub(crate) fn open(&self) -> Result<File, Error> {
        let file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let Some(e) = &self.encoded else {
            return Ok(file);
        };
        transform::decode_at(&file, e.offset, e.length, &e.transforms, e.limit)
            .map(|d| d.file)
            .map_err(|why| {
                Error::malformed(
                    &self.path,
                    format!("the item at bytes {}..+{}: {why}", e.offset, e.length),
                )
            })
    }
}

impl Tensor {
    /// Elements, when the count fits 64 bits.
    pub fn numel(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// Bytes of the canonical form.
    pub fn bytes(&self) -> Option<u64> {
        self.numel()
            .and_then(|n| n.checked_mul(self.dtype.bits()))
            .map(|bits| bits.div_ceil(8))
    }

    /// The dtype as safetensors spells it (`F32`, `BF16`, `F8_E4M3`).
    pub fn dtype_name(&self) -> String {
        self.dtype.safetensors_name()
    }
}

/// Row-major strides of `shape`, in elements.
pub(super) fn contiguous(shape: &[u64]) -> Vec<u64> {
    let mut stride = vec![1u64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        stride[k] = stride[k + 1].saturating_mul(shape[k + 1].max(1));
    }
    stride
}
