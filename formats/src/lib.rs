//! Shard formats and the `pack` pipeline of shardsmith.
//!
//! - [`naming`]: input paths → sample keys and fields, under the WebDataset readers' rules.
//! - [`source`] / [`sink`]: where raw files come from and where shards go ([`InputSource`],
//!   [`OutputSink`]); local today, object stores later, invisible to formats.
//! - [`format`]: the [`ShardFormat`] trait every format implements and the [`FormatKind`]
//!   registry; [`webdataset`] is the first format.
//! - [`pack`]: grouping, planning (rollover by bytes and samples), parallel writing with
//!   hashing while writing, atomic commits, resume, and the manifest.
//! - [`inspect`]: structural checkers for `verify`, chosen by content.
//! - [`checkpoint`]: checkpoint verification (safetensors, torch zip, DCP, DeepSpeed,
//!   Megatron) and the `audit` of a training run's checkpoints.
//!
//! The crate is synchronous, never prints and never exits.

pub mod checkpoint;
pub mod content;
mod error;
pub mod format;
pub mod inspect;
pub mod mds;
pub mod naming;
pub mod pack;
pub mod parquet;
mod resume;
pub mod shuffle;
pub mod sink;
pub mod source;
pub mod tokens;
pub mod webdataset;

pub use error::{Error, Result};
pub use format::{FormatKind, SampleSpec, ShardFormat};
pub use inspect::{Inspectors, InspectorsWith};
pub use sink::{LocalDir, OutputSink};
pub use source::{InputSource, LocalTree};
