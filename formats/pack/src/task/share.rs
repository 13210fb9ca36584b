//! What a `pack` task records for the final step.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shardsmith_manifest::ManifestKind;
use shardsmith_store::resume::Job;

use crate::state::PlanRecord;

/// What a `pack` task records besides the [`Head`].
#[derive(Serialize, Deserialize)]
pub(super) struct Share {
    pub(super) plans: Range<usize>,
    pub(super) total_plans: usize,
    /// What the format needs to write its dataset files
    /// ([`shardsmith_shard::ShardFormat::dataset_state`]).
    pub(super) format_state: Value,
    /// What became of each of its plans, in order.
    pub(super) records: Vec<PlanRecord>,
}

/// How `pack` describes itself to the shared rules.
pub(super) fn job(is_own: &dyn Fn(&str) -> bool) -> Job<'_> {
    Job {
        command: "pack",
        verb: "packed",
        kind: ManifestKind::Pack,
        is_own,
    }
}
