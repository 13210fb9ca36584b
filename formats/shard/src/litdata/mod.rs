//! LitData (Lightning AI's `litdata`) datasets, as `litdata.optimize` writes them and
//! `litdata.StreamingDataset` reads them, both ways (`../shared/reference/indexes.md`,
//! last section; the byte layouts, from litdata 0.2.76's source, in [`chunk`], [`spec`]
//! and the input's `leaf`).
//!
//! A dataset is `index.json` (`{"chunks": [...], "config": {...}}`) plus
//! `chunk-R-N.bin`. A chunk is `u32 N`, `u32 offsets[N+1]`, then the items; an item is a
//! `u32` size per leaf of its pytree, then every leaf's serialized bytes. Written, an item
//! is a dict: `__key__` (a `str`), then one leaf per field in name order, each `str` or
//! `bytes` for the whole dataset by its column encoding (text encodings `str`, the others
//! `bytes`). Read, every PyTree dataset of the common serializers ([`input`]), items
//! kept only in a chunk's Arrow IPC footer too ([`footer`]), chunks wrapped in zstd by
//! `optimize(compression="zstd")` inflated first ([`compressed`]).

pub mod chunk;
pub mod compressed;
pub mod def;
pub mod footer;
mod format;
mod index;
pub mod input;
mod inspect;
mod merge;
pub mod spec;

pub use self::format::{Litdata, MAX_CHUNK};
pub use self::index::{INDEX, is_litdata_index};
pub use self::input::{LitdataDataset, is_litdata_input};
pub use self::inspect::{LitdataInspector, check_indices, is_chunk_name};

#[cfg(test)]
mod tests;
