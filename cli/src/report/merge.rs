//! `merge --json`.

use schemars::JsonSchema;
use serde::Serialize;

/// What `merge --json` prints when the parts were merged.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Merge<'a> {
    /// Bytes of every file the root manifest lists.
    pub bytes: u64,
    /// Always `merge`.
    pub command: &'static str,
    /// Number of files the root manifest lists.
    pub files: u64,
    /// True when a root MDS `index.json` was written.
    pub index: bool,
    /// The output directory, as given.
    pub output: String,
    /// The part directory names, in merge order.
    pub parts: &'a [String],
    /// Files a split run's final step moved into place (pack: shards renumbered after a
    /// planned shard that came out empty; tokenize: every token file).
    pub renamed: usize,
    /// The root manifest's root digest (SHA-256 of its canonical JSON).
    pub root_sha256: &'a str,
    /// Samples in all parts (null if the manifest counts none).
    pub samples: Option<u64>,
    /// Tasks of a split run joined (0 when parts were merged).
    pub tasks: u32,
    /// The version of shardsmith.
    pub version: &'static str,
}
