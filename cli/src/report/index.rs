//! `index --json`.

use schemars::JsonSchema;
use serde::Serialize;

/// What `index --json` prints: the index written, or the damaged shards (exit 1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Index {
    /// Bytes of the shards indexed.
    pub bytes: u64,
    /// Always `index`.
    pub command: &'static str,
    /// Why each damaged shard cannot be indexed (shard, byte offset, what is wrong);
    /// when any, no index was written and the exit status is 1.
    pub damaged: Vec<String>,
    /// The dataset indexed, as given.
    pub dataset: String,
    /// The index files written, relative to the dataset (`wids-index.json`; none when
    /// a shard is damaged).
    pub indexes: Vec<String>,
    /// The root digest of the dataset's manifest once the index is listed in it (it
    /// changes when the manifest did not list this index before); null without a
    /// manifest.
    pub root_sha256: Option<String>,
    /// Samples in the shards, grouped as webdataset groups tar members.
    pub samples: u64,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// Number of shards indexed.
    pub shards: usize,
    /// The version of shardsmith.
    pub version: &'static str,
}
