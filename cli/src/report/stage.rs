//! `stage --json`.

use schemars::JsonSchema;
use serde::Serialize;

/// What `stage --json` prints.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Stage {
    /// Bytes copied by this run.
    pub bytes_copied: u64,
    /// Always `stage`.
    pub command: &'static str,
    /// True when every file matched and the manifest was written last.
    pub complete: bool,
    /// The destination, as given.
    pub dst: String,
    /// Files the dataset has.
    pub files: usize,
    /// Files copied by this run.
    pub files_copied: usize,
    /// Files already at the destination with the right digest, kept.
    pub files_kept: usize,
    /// True when the source had a manifest to verify against.
    pub had_manifest: bool,
    /// Files that did not arrive as the manifest says; none was kept.
    pub mismatches: Vec<StageMismatch>,
    /// The manifest's root digest (empty when not complete).
    pub root_sha256: String,
    /// Seconds the run took.
    pub seconds: f64,
    /// The source, as given.
    pub src: String,
    /// Bytes of all files.
    pub total_bytes: u64,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// One file that did not match.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StageMismatch {
    /// The first byte range `[start, end)` known to differ: the damaged chunk of a file
    /// copied by its chunk digests, else the first chunk whose CRC differs, when the
    /// chunk CRCs narrow it.
    pub bytes: Option<[u64; 2]>,
    /// Path inside the dataset.
    pub path: String,
    /// What differs.
    pub reason: String,
}
