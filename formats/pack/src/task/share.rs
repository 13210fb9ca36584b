//! What a `pack` task records for the final step.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shardsmith_manifest::{Manifest, ManifestKind, Skipped};
use shardsmith_shard::{SampleSpec, ShardFormat};
use shardsmith_store::resume::Job;
use shardsmith_store::tasks::{self, Head};

use crate::commit::Decided;
use crate::plan::ShardPlan;
use crate::run::{PackReport, TaskReport};
use crate::settings::TaskId;
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

/// The samples of the contiguous plans `mine`.
pub(super) fn samples_of(mine: &[ShardPlan]) -> Range<usize> {
    mine.first().map_or(0..0, |first| {
        first.samples.start..mine.last().map_or(first.samples.end, |l| l.samples.end)
    })
}

/// What task `task` reports of its share `range` (the plans `mine`) of `plans`.
pub(super) fn task_report(
    task: &TaskId,
    range: Range<usize>,
    mine: &[ShardPlan],
    plans: &[ShardPlan],
) -> TaskReport {
    TaskReport {
        task: task.clone(),
        plans: range,
        total_plans: plans.len(),
        bytes: (
            mine.iter().map(|p| p.bytes).sum(),
            plans.iter().map(|p| p.bytes).sum(),
        ),
    }
}

/// Counts the task's plans `mine`, `decided`, into `report` (shards written and
/// resumed, a warning for each plan that came out empty and each oversize sample), and
/// returns the samples they left out.
pub(super) fn tally(
    report: &mut PackReport,
    mine: &[ShardPlan],
    decided: &[Decided],
    samples: &[SampleSpec],
    format: &dyn ShardFormat,
    shard_size: u64,
) -> Vec<Skipped> {
    let mut skipped: Vec<Skipped> = Vec::new();
    for (plan, d) in mine.iter().zip(decided) {
        skipped.extend(d.record.skipped.iter().cloned());
        let Some(shard) = &d.record.shard else {
            report.warnings.push(format!(
                "planned shard `{}` would have held only samples that were left out: not written; `merge` numbers the shards after it on",
                d.record.planned
            ));
            continue;
        };
        if d.resumed {
            report.shards_resumed += 1;
        } else {
            report.shards_written += 1;
        }
        if plan.oversize {
            report.warnings.push(format!(
                "sample `{}` takes {} bytes in a shard, more than the shard size {}: it gets `{}` to itself",
                samples[plan.samples.start].key,
                plan.bytes - format.shard_overhead(),
                shard_size,
                shard.entry.path
            ));
        }
    }
    skipped
}

/// The head of task `task`'s record: who wrote it, for which run, and the manifest
/// every task would write.
pub(super) fn head(task: &TaskId, fingerprint: &str, manifest: Manifest) -> Head {
    Head {
        fingerprint: fingerprint.to_string(),
        index: task.index,
        count: task.count,
        source: task.source.clone(),
        host: tasks::host(),
        pid: std::process::id(),
        manifest,
    }
}
