//! The canonical form of a tensor, read: its elements in row-major order, contiguous,
//! little-endian, whatever its pieces' strides and files.
//!
//! Dimensions are first collapsed where every piece covers them whole and contiguously
//! (a contiguous tensor becomes one run). Then the global index walks the tensor in
//! row-major order, one run of the innermost dimension at a time: a run of a piece whose
//! innermost stride is 1 is one positioned read; a strided run is gathered element by
//! element, from memory when the storage range the piece spans is small enough.

mod band;
mod digest;
mod prepare;
mod reader;

pub use digest::digest;
pub(crate) use digest::read_error;
pub use reader::{BLOCK, Canonical};

#[cfg(test)]
mod tests;
