//! `list --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_manifest::Skipped;

use super::sorted::sorted;

/// What `list --json` prints (the list itself went to `-o LIST`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct List<'a> {
    /// Bytes of the files listed.
    pub bytes: u64,
    /// Always `list`.
    pub command: &'static str,
    /// Number of files listed.
    pub files: usize,
    /// The input listed, as given.
    pub input: String,
    /// The list written.
    pub list: String,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// Entries left out (as `pack` would leave them out), each with the reason.
    #[serde(serialize_with = "sorted")]
    pub skipped: &'a [Skipped],
    /// The version of shardsmith.
    pub version: &'static str,
}
