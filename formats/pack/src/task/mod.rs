//! A `pack` run split into tasks (Slurm array tasks, Kubernetes Indexed Job pods) that
//! never talk to each other, finished by one final step (`shardsmith merge OUTPUT`).
//!
//! Every task lists the same input and computes the same global plan, so the same
//! fingerprint; task `i` of `N` writes the plans of its share ([`share`]: contiguous,
//! balanced by bytes) under the names they have when no plan before them comes out
//! empty, keeping a record per plan as a single run does (so a killed task, re-run,
//! resumes). When its share is decided it writes its task record: what the final step
//! needs (the manifest every task would write without its files, the format's dataset
//! state, the record of each of its plans). The final step ([`finish`]) reads the `N`
//! records, refuses when one is missing, was made with other options or input, or the
//! shares do not tile the plan, numbers the shards on past any empty plan (renaming, which
//! only happens when a whole planned shard was left out), and writes the format's dataset
//! files, `SHA256SUMS` and, last, the manifest: the bytes a single run writes.
//!
//! Two tasks given the same index are found: each takes that index's lock while it runs,
//! and each leaves a claim naming itself that it checks again before writing its record,
//! so the earlier of two overlapping runs fails instead of recording a share that another
//! run was writing at the same time.

mod finish;
mod record;

use std::ops::Range;

use shardsmith_manifest::{MANIFEST_FILE, Manifest, ManifestKind, Skipped, TEMP_PREFIX};
use shardsmith_shard::SampleSpec;
use shardsmith_store::OutputSink;
use shardsmith_store::resume;

pub use self::finish::{FinishReport, finish, is_split_run};
use self::record::{Claim, TaskRecord, Tasks, claim_file, host, record_file, tasks_file, to_json};
use super::commit;
use super::plan::{self, ShardPlan};
use super::state::is_own_shard;
pub use crate::run::TaskReport;
use crate::run::{PackReport, Run};
use crate::settings::TaskId;
use crate::{Error, Result};

/// The plans of task `index` of `count`: a contiguous range, its first plan the one whose
/// start lies nearest `index / count` of the bytes of the whole plan. Ranges of
/// consecutive tasks meet, the first starts at 0 and the last ends at the last plan; a
/// task gets none when there are fewer plans than tasks or one plan outweighs its share.
pub fn share(plans: &[ShardPlan], index: u32, count: u32) -> Range<usize> {
    let total: u128 = plans.iter().map(|p| u128::from(p.bytes)).sum();
    let boundary = |k: u32| -> usize {
        if k == 0 {
            return 0;
        }
        if k >= count {
            return plans.len();
        }
        let target = total * u128::from(k) / u128::from(count);
        let mut before = 0u128;
        for (p, plan) in plans.iter().enumerate() {
            let after = before + u128::from(plan.bytes);
            if after > target {
                // Cut before or after this plan, whichever lies nearer the target.
                return if target - before <= after - target {
                    p
                } else {
                    p + 1
                };
            }
            before = after;
        }
        plans.len()
    };
    boundary(index)..boundary(index + 1).max(boundary(index))
}

/// Refuses an output this task may not write into; `Some` when the run is already
/// finished there (its manifest).
fn prepare(
    sink: &dyn OutputSink,
    candidate: &Manifest,
    fingerprint: &str,
    is_own: &dyn Fn(&str) -> bool,
) -> Result<Option<Manifest>> {
    let conflict = |reason: String| {
        Error::Store(shardsmith_store::Error::OutputConflict {
            dir: sink.describe(),
            reason,
        })
    };
    let job = resume::Job {
        command: "pack",
        verb: "packed",
        kind: ManifestKind::Pack,
        is_own,
    };
    if let Some(bytes) = sink.read(MANIFEST_FILE)? {
        return match Manifest::parse(&bytes, MANIFEST_FILE.as_ref()) {
            Ok((old, _)) => {
                let diff = resume::difference(&old, candidate, &job);
                if diff.is_empty() {
                    Ok(Some(old))
                } else {
                    Err(conflict(format!(
                        "already holds a dataset packed differently ({diff}); a task never replaces one: empty the output or choose another"
                    )))
                }
            }
            Err(e) => Err(conflict(format!(
                "holds a manifest that cannot be read ({e}); a task never replaces one: empty the output or choose another"
            ))),
        };
    }
    let same_run = |found: Option<String>| -> Result<bool> {
        match found {
            Some(f) if f == fingerprint => Ok(true),
            Some(_) => Err(conflict(
                "holds a split run with other options or input: every task of one run needs the same input and options; finish that run, or empty the output".into(),
            )),
            None => Ok(false),
        }
    };
    if same_run(resume::run_fingerprint(sink)?)? {
        return Ok(None);
    }
    let foreign: Vec<String> = sink
        .list()?
        .into_iter()
        .filter(|e| !e.starts_with(TEMP_PREFIX))
        .collect();
    // Another task may have started the run between the two reads.
    if !foreign.is_empty() && !same_run(resume::run_fingerprint(sink)?)? {
        let shown: Vec<String> = foreign.iter().take(3).map(|e| format!("`{e}`")).collect();
        return Err(conflict(format!(
            "is not empty and holds no run of these tasks (found {}{}); tasks write only into an empty output or one their own run started",
            shown.join(", "),
            if foreign.len() > 3 { ", ..." } else { "" }
        )));
    }
    resume::start_run(sink, fingerprint)?;
    Ok(None)
}

/// Packs task `task`'s share of the global plan of `samples` into the shared output.
pub(crate) fn pack_share(
    run: &Run<'_>,
    task: &TaskId,
    samples: &[SampleSpec],
    candidate: Manifest,
) -> Result<PackReport> {
    let Run {
        sink,
        format,
        choice,
        settings,
        observer,
        fingerprint,
        ..
    } = *run;
    let prefix = choice.prefix();
    let is_own = |entry: &str| is_own_shard(entry, format, prefix);
    let _lock = sink.lock_named(&format!("lock-task-{:06}", task.index))?;
    if let Some(done) = prepare(sink, &candidate, fingerprint, &is_own)? {
        return Ok(PackReport {
            manifest: done,
            shards_written: 0,
            shards_resumed: 0,
            already_complete: true,
            warnings: Vec::new(),
            task: None,
        });
    }
    let claim = Claim {
        host: host(),
        pid: std::process::id(),
        nonce: format!(
            "{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ),
    };
    sink.write_atomic(&claim_file(task.index), &to_json(&claim))?;
    sink.write_atomic(&tasks_file(), &to_json(&Tasks { count: task.count }))?;

    let plans = plan::plan(samples, format, choice.shard_size(), settings.max_samples);
    let range = share(&plans, task.index, task.count);
    let mine = &plans[range.clone()];
    let in_share = mine.first().map_or(0..0, |first| {
        first.samples.start..mine.last().map_or(first.samples.end, |l| l.samples.end)
    });
    observer.planned(
        in_share.len() as u64,
        samples[in_share].iter().map(SampleSpec::payload).sum(),
        mine.len(),
    );
    let job = commit::Job {
        ctx: run.write_context(),
        samples,
        plans: mine,
        prefix,
        fingerprint,
        resuming: true,
        by_plan: true,
        threads: rayon::current_num_threads(),
    };
    let decided = commit::write_and_commit(&job)?;

    // Still this run's index, and still this run's output?
    let holder = sink
        .read(&claim_file(task.index))?
        .and_then(|b| serde_json::from_slice::<Claim>(&b).ok());
    if holder.as_ref() != Some(&claim) {
        let who = holder.map_or_else(
            || "its claim was removed".to_string(),
            |h| format!("process {} on host `{}` claimed it", h.pid, h.host),
        );
        return Err(Error::Task(format!(
            "task {} of {} was started again while this run of it was under way ({who}): two tasks were given the same index ({}); this run records nothing, the other one finishes the share",
            task.index, task.count, task.source
        )));
    }
    if resume::run_fingerprint(sink)?.as_deref() != Some(fingerprint) {
        return Err(Error::Task(format!(
            "`{}` was taken over by a run with other options or input while task {} wrote its share",
            sink.describe(),
            task.index
        )));
    }

    let mut report = PackReport {
        manifest: candidate.clone(),
        shards_written: 0,
        shards_resumed: 0,
        already_complete: false,
        warnings: Vec::new(),
        task: Some(TaskReport {
            task: task.clone(),
            plans: range.clone(),
            total_plans: plans.len(),
            bytes: (
                mine.iter().map(|p| p.bytes).sum(),
                plans.iter().map(|p| p.bytes).sum(),
            ),
        }),
    };
    let mut skipped: Vec<Skipped> = Vec::new();
    for (plan, d) in mine.iter().zip(&decided) {
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
                choice.shard_size(),
                shard.entry.path
            ));
        }
    }
    report.manifest.skipped.extend(skipped);
    report.manifest.skipped.sort();
    let record = TaskRecord {
        fingerprint: fingerprint.to_string(),
        index: task.index,
        count: task.count,
        source: task.source.clone(),
        host: claim.host.clone(),
        pid: claim.pid,
        plans: range,
        total_plans: plans.len(),
        manifest: candidate,
        format_state: format.dataset_state(),
        records: decided.into_iter().map(|d| d.record).collect(),
    };
    sink.write_atomic(&record_file(task.index), &to_json(&record))?;
    Ok(report)
}

#[cfg(test)]
mod tests;
