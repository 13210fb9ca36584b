//! The shard formats of shardsmith and what they share.
//!
//! Owns: the [`ShardFormat`] trait and its shared types ([`format`]; the planned samples
//! and the [`SampleSource`] trait in [`sample`]; column encodings in [`columns`]); the
//! formats, one module each ([`webdataset`], [`mds`], [`parquet`]), each owning its
//! options, defaults (shard size), the samples it refuses, its inspector and how its
//! files are recognised (its `def.rs`, implementing [`definition::FormatDef`]); the
//! [`registry`] of formats, in its own file above them; content
//! checks of fields ([`content`]); the naming rules readers key samples by ([`naming`])
//! and the uniqueness of keys from several input files ([`keys`]);
//! and the one Parquet row reader ([`parquet::rows`]) that `pack` and `tokenize` share.
//!
//! Must not know: the pack or tokenize pipelines (planning, resume, manifests of runs),
//! token formats, checkpoints, or the command line. Reads and writes through
//! `shardsmith-store` only. Synchronous; never prints, never exits.
//!
//! Adding a shard format is one module here (implement [`ShardFormat`] and
//! [`definition::FormatDef`]) plus one line in [`registry::FORMATS`].

mod arrow_values;
pub mod columns;
pub mod content;
pub mod definition;
pub mod digest;
mod error;
pub mod format;
pub mod hf;
mod ipc_guard;
pub mod keys;
pub mod litdata;
pub mod mds;
pub mod naming;
pub mod parquet;
pub mod registry;
pub mod sample;
pub mod webdataset;

pub use definition::{FormatDef, FormatOptions, InputSpec};
pub use error::{Error, Result};
pub use format::{ShardFormat, ShardOut};
pub use registry::{FormatChoice, FormatKind};
pub use sample::{FieldSpec, SampleSource, SampleSpec};
