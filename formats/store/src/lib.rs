//! Where shardsmith reads its inputs and writes its outputs.
//!
//! Owns: the [`InputSource`] and [`OutputSink`] traits and their local implementations
//! ([`LocalTree`], [`LocalDir`]); the resume state of a run that writes a dataset
//! ([`resume`]); and the steps every such run ends with ([`finish`]: `SHA256SUMS`, then
//! the manifest, last, then the state goes); and what the tasks of a split run share
//! ([`tasks`]). The `pack` and `tokenize` pipelines read and
//! write only through these traits, so an object store is one more implementation here,
//! with its async runtime kept inside it.
//!
//! Must not know: any shard, token or checkpoint format, or the command line. It is
//! synchronous, never prints and never exits.

mod error;
pub mod files_from;
pub mod finish;
mod flags;
pub mod listed_manifest;
pub mod local;
#[cfg(feature = "object")]
pub mod object;
pub mod resume;
pub mod sink;
pub mod source;
pub mod stage;
pub mod tasks;
mod writeback;

pub use error::{Error, Result};
pub use local::{LocalFile, LocalTree};
#[cfg(feature = "object")]
pub use object::{
    DEFAULT_STORAGE_TIMEOUT, Location, ObjectDir, ObjectTree, OnRetry, REFUSED_FOR, Retry,
    StorageOptions,
};
pub use sink::{LocalDir, OutputSink, ShardFile};
pub use source::{InputListing, InputSource, ListedFile, Prefetched, RangeRead, ReadError};
