//! `pack --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_manifest::{Duplicates, Skipped};

use super::sorted::sorted;

/// What `pack --json` prints when the run succeeded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Pack<'a> {
    /// True when the output already held this exact dataset and nothing was written.
    pub already_complete: bool,
    /// Always `pack`.
    pub command: &'static str,
    /// The shard format written (`webdataset`, `mds`, `parquet`).
    pub format: Option<&'a str>,
    /// Bytes of the input files packed, or null when the manifest records no input.
    pub input_bytes: Option<u64>,
    /// Number of input files packed, or null when the manifest records no input.
    pub input_files: Option<u64>,
    /// The manifest's file name inside `output` (`manifest.json`).
    pub manifest: &'static str,
    /// The output directory, as given.
    pub output: String,
    /// Bytes of every file the manifest lists (shards and index files).
    pub output_bytes: u64,
    /// The manifest's root digest (SHA-256 of its canonical JSON).
    pub root_sha256: &'a str,
    /// Samples packed (null if the manifest counts none).
    pub samples: Option<u64>,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// The shard names as one brace pattern (`shard-{000000..000009}.tar`), or `""` when
    /// they form no consecutive run.
    pub shard_pattern: String,
    /// Number of shards in the output.
    pub shards: usize,
    /// Shards an interrupted run had finished and this run kept.
    pub shards_resumed: usize,
    /// Shards this run wrote.
    pub shards_written: usize,
    /// Inputs left out, each with its path and the reason.
    #[serde(serialize_with = "sorted")]
    pub skipped: &'a [Skipped],
    /// With `--dedup`: `count` and `bytes` of the samples left out because their fields
    /// equal an earlier sample's, and the `first` 1,000 of them, each with its `key` and
    /// the key it repeats (`of`); absent without `--dedup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<&'a Duplicates>,
    /// For one task of a split run: `index`, `count`, `source` (where they were read),
    /// `plans` (`[first, end)` of the global plan) and `total_plans`; absent otherwise.
    /// The manifest fields are then empty: `merge` writes the manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<PackTask<'a>>,
    /// The version of shardsmith.
    pub version: &'static str,
    /// Things worth telling the user (a sample larger than the shard size, ...).
    pub warnings: &'a [String],
}

/// The task of a split `pack` run, in [`Pack`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct PackTask<'a> {
    /// Number of tasks.
    pub count: u32,
    /// This task's index (0-based).
    pub index: u32,
    /// `[first, end)` of this task's plans in the global plan.
    pub plans: [usize; 2],
    /// Where the index and count were read (`--task-index 3 --task-count 8`, a Slurm
    /// array, ...).
    pub source: &'a str,
    /// Plans in the whole run.
    pub total_plans: usize,
}
