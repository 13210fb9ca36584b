//! `pack` split into tasks (Slurm array tasks, Kubernetes Indexed Job pods) that never
//! talk to each other, finished by one final step (`shardsmith merge OUTPUT`). The
//! rules they share with `tokenize` are in [`shardsmith_store::tasks`].
//!
//! Every task lists the same input and computes the same global plan, so the same
//! fingerprint; task `i` of `N` writes the plans of its share (contiguous, balanced by
//! bytes) under the names they have when no plan before them comes out empty, keeping a
//! record per plan as a single run does (so a killed task, re-run, resumes). When its
//! share is decided it writes its task record: what the final step needs (the format's
//! dataset state, the record of each of its plans). The final step ([`finish`]) reads the
//! `N` records, refuses when one is missing, was made with other options or input, or the
//! shares do not tile the plan, numbers the shards on past any empty plan (renaming, which
//! only happens when a whole planned shard was left out), and writes the format's dataset
//! files, `SHA256SUMS` and, last, the manifest: the bytes a single run writes.
//!
//! Two tasks given the same index are found: each takes that index's lock while it runs,
//! and each leaves a claim naming itself that it checks again before writing its record,
//! so the earlier of two overlapping runs fails instead of recording a share that another
//! run was writing at the same time.

mod finish;
mod share;

use std::ops::Range;

use shardsmith_manifest::Manifest;
use shardsmith_shard::SampleSpec;
use shardsmith_store::tasks;

pub use self::finish::finish;
use self::share::{Share, head, job, samples_of, tally, task_report};
use super::commit;
use super::plan::{self, ShardPlan};
use super::state::is_own_shard;
use crate::Result;
pub use crate::run::TaskReport;
use crate::run::{PackReport, Run};
use crate::settings::TaskId;
pub use shardsmith_store::tasks::FinishReport;

/// The plans of task `index` of `count`: see [`tasks::share`].
pub fn share(plans: &[ShardPlan], index: u32, count: u32) -> Range<usize> {
    let bytes: Vec<u64> = plans.iter().map(|p| p.bytes).collect();
    tasks::share(&bytes, index, count)
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
    let _lock = sink.lock_named(&tasks::lock_tag(task.index))?;
    if let Some(done) = tasks::prepare(sink, &job(&is_own), &candidate, fingerprint)? {
        return Ok(PackReport {
            manifest: done,
            shards_written: 0,
            shards_resumed: 0,
            already_complete: true,
            warnings: Vec::new(),
            task: None,
        });
    }
    let claim = tasks::claim(sink, task, "pack")?;

    let plans = plan::plan(samples, format, choice.shard_size(), settings.max_samples);
    let range = share(&plans, task.index, task.count);
    let mine = &plans[range.clone()];
    let in_share = samples_of(mine);
    observer.planned(
        in_share.len() as u64,
        samples[in_share].iter().map(SampleSpec::payload).sum(),
        mine.len(),
    );
    // The final step makes the dataset files, from every task's records.
    let no_builder = std::sync::Mutex::new(None);
    // Each task leaves out the duplicates within its share: see `finish`.
    let seen = settings.dedup.then(crate::dedup::Seen::default);
    let job = commit::Job {
        dedup: seen.as_ref(),
        builder: &no_builder,
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

    let mut report = PackReport {
        manifest: candidate.clone(),
        shards_written: 0,
        shards_resumed: 0,
        already_complete: false,
        warnings: Vec::new(),
        task: Some(task_report(task, range.clone(), mine, &plans)),
    };
    let skipped = tally(
        &mut report,
        mine,
        &decided,
        samples,
        format,
        choice.shard_size(),
    );
    report.manifest.skipped.extend(skipped);
    report.manifest.skipped.sort();
    if settings.dedup {
        let mut duplicates = shardsmith_manifest::Duplicates::default();
        for d in &decided {
            duplicates.extend(d.record.duplicates.clone());
        }
        report.manifest.duplicates = Some(duplicates);
    }
    let head = head(task, fingerprint, candidate);
    let share = Share {
        plans: range,
        total_plans: plans.len(),
        format_state: format.dataset_state(),
        records: decided.into_iter().map(|d| d.record).collect(),
    };
    tasks::save(sink, &head, &claim, &share)?;
    Ok(report)
}

#[cfg(test)]
mod tests;
