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
//! storage range it spans is at most [`canon::reader::GATHER_LIMIT`] bytes (else element by
//! element through a small window), so memory stays bounded whatever the tensor size.

mod canon;
mod containers;
pub(crate) mod dcp;
pub mod diff;
mod files;
mod legacy;
mod model;
pub mod recorded;
mod rules;
mod values;

pub use crate::dcp::transform::Transform;
pub use crate::error::RuleError;
pub use canon::{Canonical, digest};
pub use files::{of_file, open, open_all};
pub use model::{Checkpoint, Encoded, Entry, Piece, Tensor};
pub use rules::MapRules;
pub use values::ValueDiff;
