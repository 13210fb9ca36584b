//! `ls --json` and `stats --json`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

/// `ls --json` of token files: one entry per file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LsTokens<'a> {
    /// Always `ls`.
    pub command: &'static str,
    /// Every token file, in path order.
    pub files: Vec<TokenFileRow<'a>>,
    /// Always `tokens`.
    pub kind: &'static str,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// One token file of [`LsTokens`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenFileRow<'a> {
    /// Bytes of the token file.
    pub bytes: u64,
    /// Documents, or null when the format does not record them (nanoGPT, llm.c).
    pub documents: Option<u64>,
    /// Token type (`uint16`, `int32`, ...).
    pub dtype: &'a str,
    /// Token file format (`megatron`, `nanogpt`, `llmc`).
    pub format: &'a str,
    /// The file, relative to the dataset.
    pub path: &'a str,
    /// Tokens.
    pub tokens: u64,
}

/// `ls --json` of a checkpoint: one entry per tensor.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LsCheckpoint<'a> {
    /// Always `ls`.
    pub command: &'static str,
    /// Always `checkpoint`.
    pub kind: &'static str,
    /// Every tensor, file by file, in the order each file lists them.
    pub tensors: Vec<TensorRow<'a>>,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// One tensor of [`LsCheckpoint`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct TensorRow<'a> {
    /// Bytes of its elements.
    pub bytes: u64,
    /// Element type, safetensors spelling (`F32`, `BF16`).
    pub dtype: &'a str,
    /// The file it is in.
    pub file: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its shape.
    pub shape: &'a [u64],
}

/// `ls --json` of shards: one entry per shard.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LsShards<'a> {
    /// Always `ls`.
    pub command: &'static str,
    /// The shard format (`webdataset`, `mds`, `parquet`).
    pub kind: &'static str,
    /// Every shard, in reading order.
    pub shards: Vec<ShardRow<'a>>,
    /// Entries the reader skips (counted; `stats` and `verify` name them).
    pub skipped: usize,
    /// Bytes, samples and shards over all.
    pub totals: ShardTotals,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// One shard of [`LsShards`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShardRow<'a> {
    /// Bytes of the shard file.
    pub bytes: u64,
    /// The fields its samples have, sorted.
    pub fields: Vec<String>,
    /// Key of its first sample.
    pub first_key: &'a str,
    /// Key of its last sample.
    pub last_key: &'a str,
    /// The shard file.
    pub name: &'a str,
    /// Samples in it.
    pub samples: usize,
}

/// The totals of [`LsShards`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShardTotals {
    /// Bytes of the shard files.
    pub bytes: u64,
    /// Samples.
    pub samples: usize,
    /// Shards.
    pub shards: usize,
}

/// `ls -l --json`: one entry per sample.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LsSamples<'a> {
    /// Always `ls`.
    pub command: &'static str,
    /// The shard format (`webdataset`, `mds`, `parquet`).
    pub kind: &'static str,
    /// Every sample, in reading order.
    pub samples: Vec<SampleRow<'a>>,
    /// Entries the reader skips.
    pub skipped: usize,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// One sample of [`LsSamples`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct SampleRow<'a> {
    /// Each field's name and size in bytes.
    pub fields: BTreeMap<&'a str, u64>,
    /// The sample's key.
    pub key: &'a str,
    /// The shard it is in.
    pub shard: &'a str,
}

/// `stats --json`: field size distributions and duplicate keys.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Stats<'a> {
    /// Bytes of every field of every sample.
    pub bytes: u64,
    /// Always `stats`.
    pub command: &'static str,
    /// With `--dedup`: samples whose fields (names and bytes, the key apart) equal an
    /// earlier sample's, `count` and `bytes`, and the `first` five with the `key` each
    /// repeats (`of`); absent without `--dedup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_contents: Option<DuplicateContents<'a>>,
    /// Keys that more than one sample has.
    pub duplicate_keys: DuplicateKeys<'a>,
    /// Per field: how many samples have it and its sizes' distribution.
    pub fields: BTreeMap<&'a str, FieldStats>,
    /// The shard format (`webdataset`, `mds`, `parquet`).
    pub kind: &'static str,
    /// Samples.
    pub samples: usize,
    /// Shards.
    pub shards: usize,
    /// Entries the reader skips.
    pub skipped: usize,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// The duplicate contents of [`Stats`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct DuplicateContents<'a> {
    /// Bytes of the samples that repeat an earlier one.
    pub bytes: u64,
    /// Samples that repeat an earlier one.
    pub count: u64,
    /// The first of them, in reading order, each with the key it repeats.
    pub first: &'a [shardsmith_manifest::Duplicate],
}

/// The duplicate keys of [`Stats`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct DuplicateKeys<'a> {
    /// Keys that repeat.
    pub count: usize,
    /// The first of them, in reading order.
    pub first: &'a [String],
    /// Samples beyond the first with a repeated key.
    pub repeats: usize,
}

/// The size distribution of one field over the samples that have it.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
pub struct FieldStats {
    /// Total bytes.
    pub bytes: u64,
    /// Largest.
    pub max: u64,
    /// Median (nearest rank).
    pub median: u64,
    /// Smallest.
    pub min: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Samples that have the field.
    pub samples: usize,
}
