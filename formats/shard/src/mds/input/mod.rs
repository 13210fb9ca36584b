//! MosaicML Streaming (MDS) datasets as a sample source: every record of every shard, in
//! `index.json` order (`../shared/reference/mds.md` §2–§6, §11).
//!
//! Each column is a field named after it (lowercased), whose bytes are what our writers
//! take back for the column's encoding ([`values`]), so re-packing keeps the values; the
//! encodings are suggested to typed outputs. The key is the key column's value when the
//! shards have it as text, else the global sample index (`000000042`). Shards are read
//! raw when their raw file is present, else decompressed (into unnamed scratch files, or
//! memory when no scratch directory is given). The listing checks every shard against
//! the index (size, count, offsets, column sizes) and holds no shard data.

mod dataset;
mod index;
mod index_error;
pub(crate) mod pil;
pub(crate) mod problem;
mod reader;
mod record;
mod shard;
mod shard_error;
pub(crate) mod values;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bytes;

pub(crate) use self::dataset::INDEX;
pub use self::dataset::{MdsDataset, is_mds_input};
