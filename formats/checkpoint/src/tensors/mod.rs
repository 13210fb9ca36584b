//! Checkpoints by content: every tensor of a checkpoint file or directory as a logical
//! tensor (name, dtype, shape, and where its elements lie: one strided view into a
//! safetensors file or a torch storage, or the chunks of a DCP checkpoint spread over
//! files), read back in one canonical byte order whatever the container.
//!
//! The canonical form of a tensor is its elements in row-major (C) order, contiguous,
//! little-endian, nothing else: what `np.ascontiguousarray(a).tobytes()` gives on a
//! little-endian machine. A transposed torch view and its contiguous copy, a DCP tensor
//! split over two ranks and the same tensor in one safetensors file, all read the same.
//! [`digest`] is the SHA-256 of that form; [`diff`] compares two checkpoints by it.
//!
//! Reads are positioned and bounded: a contiguous run is streamed in blocks of at most
//! [`canon::BLOCK`] bytes, and a strided view is gathered from memory only when the
//! storage range it spans is at most [`canon::GATHER_LIMIT`] bytes (else element by
//! element through a small window), so memory stays bounded whatever the tensor size.

mod canon;
mod dcp;
pub mod diff;
mod files;
mod legacy;
pub mod recorded;
mod rules;
mod values;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use canon::Canonical;
pub use rules::{MapRules, RuleError};
pub use values::ValueDiff;

use super::values::TensorDtype;

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
}

/// Why the tensors of a checkpoint cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    /// A file cannot be read.
    #[error("`{path}`: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A file's structure does not describe its tensors readably.
    #[error("`{path}`: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A file or directory that holds no checkpoint format shardsmith reads tensors of.
    #[error("`{path}`: {reason}")]
    Unsupported {
        /// The file or directory.
        path: String,
        /// What it is, and what is read.
        reason: String,
    },
}

impl TensorError {
    /// Stable snake_case name, as `--json` reports it.
    pub fn kind(&self) -> &'static str {
        match self {
            TensorError::Io { .. } => "io",
            TensorError::Malformed { .. } => "bad_input",
            TensorError::Unsupported { .. } => "unsupported",
        }
    }

    /// The file or directory the error is about.
    pub fn path(&self) -> Option<String> {
        match self {
            TensorError::Io { path, .. }
            | TensorError::Malformed { path, .. }
            | TensorError::Unsupported { path, .. } => Some(path.clone()),
        }
    }

    pub(crate) fn malformed(path: &Path, reason: impl Into<String>) -> Self {
        TensorError::Malformed {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        TensorError::Io {
            path: path.display().to_string(),
            source,
        }
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
        super::listing::dtype_name(self.dtype)
    }

    /// A reader of the canonical form.
    pub fn canonical(&self) -> Result<Canonical<'_>, TensorError> {
        Canonical::new(self)
    }
}

/// The SHA-256 (lowercase hex) of `tensor`'s canonical form.
pub fn digest(tensor: &Tensor) -> Result<String, TensorError> {
    let mut reader = tensor.canonical()?;
    let mut hasher = Sha256::new();
    loop {
        let chunk = reader
            .next_chunk()
            .map_err(|e| canon::read_error(tensor, e))?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        hasher.update(chunk);
        reader.consume(n);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every tensor of the checkpoint at `path`: a safetensors file, a torch zip or legacy
/// torch file, a DCP directory (or its `.metadata`), or a directory of such files
/// (sharded safetensors, DeepSpeed or Megatron rank files), sorted by name. When two
/// files of a directory hold the same name (one per rank), every tensor of the
/// directory is named `FILE:NAME`, FILE relative to the directory.
pub fn open(path: &Path) -> Result<Vec<Tensor>, TensorError> {
    let mut tensors = if path.is_dir() {
        files::directory(path)?
    } else {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match files::file(path, &name)? {
            Some(tensors) => tensors,
            None => {
                return Err(TensorError::Unsupported {
                    path: path.display().to_string(),
                    reason: "is not a checkpoint whose tensors shardsmith reads (safetensors, a torch zip, a DCP directory)".into(),
                });
            }
        }
    };
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    if path.is_dir() && tensors.windows(2).any(|w| w[0].name == w[1].name) {
        for t in &mut tensors {
            t.name = format!("{}:{}", t.file, t.name);
        }
        tensors.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if let Some(pair) = tensors.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(TensorError::Malformed {
            path: path.display().to_string(),
            reason: format!(
                "tensor `{}` is in both `{}` and `{}`; compare the files one by one",
                pair[0].name, pair[0].file, pair[1].file
            ),
        });
    }
    Ok(tensors)
}

/// The tensors of the one checkpoint file `path`, shown as `rel`; `Ok(None)` when it is
/// not a checkpoint file whose tensors are read (a `.metadata` is read as its DCP
/// directory).
pub fn of_file(path: &Path, rel: &str) -> Result<Option<Vec<Tensor>>, TensorError> {
    files::file(path, rel)
}
