//! What a `tokenize` run records with every finished shard, so that a resumed run
//! continues exactly where it ended.

use serde::{Deserialize, Serialize};
use shardsmith_manifest::{Duplicates, FileEntry, Skipped};

use crate::batch::Position;

/// Malformed records listed by name in the manifest (all are counted).
pub(super) const SKIPPED_LISTED: usize = 1000;

/// Running totals, saved with every shard so a resumed run continues them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stats {
    pub(super) documents: u64,
    pub(super) tokens: u64,
    pub(super) skipped_total: u64,
    pub(super) skipped: Vec<Skipped>,
    /// With `--dedup`: the documents left out because their text repeats an earlier one's.
    #[serde(default, skip_serializing_if = "Duplicates::is_empty")]
    pub(super) duplicates: Duplicates,
}

/// The resume record of a finished shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ShardRecord {
    pub(super) entries: Vec<FileEntry>,
    /// Where the next shard's first document starts.
    pub(super) next: Position,
    /// Tokens of that document this shard (and those before) already hold.
    pub(super) carry: u64,
    pub(super) stats: Stats,
    /// With `--dedup`: the digest (32 hex digits) and place of each document this shard
    /// starts, so that a resumed run knows every text written before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) kept: Vec<(String, Position)>,
}
