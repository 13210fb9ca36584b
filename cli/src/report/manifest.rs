//! `manifest --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_manifest::{Finding, Skipped};

use super::sorted::sorted;

/// What `manifest --json` prints when the manifest was written.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Manifest<'a> {
    /// Bytes of the files listed.
    pub bytes: u64,
    /// Always `manifest`.
    pub command: &'static str,
    /// Number of files listed.
    pub files: u64,
    /// The manifest file written (`DIR/manifest.json`, or the `-o` path).
    pub manifest: String,
    /// The manifest's root digest (SHA-256 of its canonical JSON).
    pub root_sha256: &'a str,
    /// Samples counted in the tar shards walked, or null when there were none.
    pub samples: Option<u64>,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// Files left out of the manifest, each with its path and the reason.
    #[serde(serialize_with = "sorted")]
    pub skipped: &'a [Skipped],
    /// Tensors recorded with --tensors, or null without it.
    pub tensors: Option<u64>,
    /// The version of shardsmith.
    pub version: &'static str,
    /// What the walk of the tar shards found (findings, as `verify` reports them).
    #[serde(serialize_with = "sorted")]
    pub warnings: &'a [Finding],
}
