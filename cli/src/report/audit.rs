//! `audit --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_checkpoint::audit::CheckpointStatus;
use shardsmith_checkpoint::hfcache::RepoStatus;
use shardsmith_manifest::Finding;

use super::sorted::sorted;

/// What `audit --json` prints when the audit ran (exit 0 or 1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Audit<'a> {
    /// Bytes read over every checkpoint.
    pub bytes_checked: u64,
    /// Every checkpoint, oldest first: its `name`, `step`, `intact`, `errors`,
    /// `warnings`, `files_checked`, `bytes_checked`, `manifest` and `findings`.
    #[serde(serialize_with = "sorted")]
    pub checkpoints: &'a [CheckpointStatus],
    /// Always `audit`.
    pub command: &'static str,
    /// Findings about the run directory itself: pointer files, leftovers.
    #[serde(serialize_with = "sorted")]
    pub findings: &'a [Finding],
    /// The newest checkpoint's name, or null.
    pub newest: Option<&'a str>,
    /// The newest intact checkpoint's name, or null when none is intact.
    pub newest_intact: Option<&'a str>,
    /// True when the newest checkpoint is intact and every pointer is right (exit 0).
    pub ok: bool,
    /// The path of the newest intact checkpoint (what a resume should load), or null
    /// when none is intact.
    pub resume_from: Option<String>,
    /// The run directory, as given.
    pub run_dir: String,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// What `audit --json` prints for a Hugging Face cache (exit 0 or 1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct HfCacheAudit<'a> {
    /// Blob bytes read.
    pub bytes_checked: u64,
    /// Always `audit`.
    pub command: &'static str,
    /// Every finding, sorted by path.
    #[serde(serialize_with = "sorted")]
    pub findings: Vec<Finding>,
    /// True when every snapshot a ref names is present and intact (exit 0).
    pub ok: bool,
    /// The cache, as given.
    pub path: String,
    /// Every repository: its `kind`, `repo` id, `dir`, `findings` and `snapshots`
    /// (each one's `commit`, `refs`, `files`, `intact`, `errors`, `warnings`, `findings`).
    #[serde(serialize_with = "sorted")]
    pub repos: &'a [RepoStatus],
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// The version of shardsmith.
    pub version: &'static str,
}
