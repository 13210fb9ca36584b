//! DCP coverage: in a `.metadata`, the chunks of every tensor tile its global shape
//! exactly once (each chunk within the shape, no two intersecting, no element left
//! out), and every chunk and bytes item has the `storage_data` entry `dcp.load` looks
//! it up by (`MetadataIndex(fqn, offset)`). The pickle is untrusted: arithmetic is
//! checked, a tensor of more than [`MAX_CHUNKS`] chunks is not compared, and one
//! `.metadata` spends at most [`MAX_WORK`] box comparisons (overlaps are found by a
//! sweep along the most divided dimension: about linear for real sharding layouts).

mod describe;
mod metadata;
mod tiling;

pub(crate) use metadata::{check, ints};

#[cfg(test)]
mod tests;
