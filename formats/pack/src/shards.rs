//! Stages 2 to 4 of [`crate::pack`]: the shards planned, written and committed in plan
//! order, then the format's dataset files, `SHA256SUMS` and, last, the manifest.

use serde_json::Value;
use shardsmith_manifest::{Duplicates, Manifest, Skipped};
use std::sync::Mutex;

use shardsmith_shard::SampleSpec;
use shardsmith_shard::format::{DatasetBuilder, write_files};

use crate::dedup::Seen;
use crate::left_out::validation_note;
use crate::plan::{self, ShardPlan};
use crate::run::{PackReport, Run};
use crate::{Error, Result, commit, state};

/// The shards written (or kept from an interrupted run), in order.
pub(crate) struct Written {
    pub(crate) shards: Vec<state::ShardRecord>,
    /// The dataset files' builder, fed every shard in order, when the format has one.
    pub(crate) builder: Option<Box<dyn DatasetBuilder>>,
    pub(crate) skipped: Vec<Skipped>,
    /// With `--dedup`: the samples left out as duplicates.
    pub(crate) duplicates: Option<Duplicates>,
    pub(crate) shards_resumed: usize,
    pub(crate) warnings: Vec<String>,
}

/// The shards the commit kept, in plan order.
struct Kept {
    shards: Vec<state::ShardRecord>,
    shards_resumed: usize,
    /// Plans whose samples were all left out while writing.
    empty_plans: usize,
    /// One per oversize sample that got a shard to itself.
    warnings: Vec<String>,
    /// The samples left out as duplicates, in plan order.
    duplicates: Duplicates,
}

/// What the commit decided for each plan: its shard kept (written or resumed) or, when
/// all its samples were left out, none; the samples left out go to `skipped`.
fn kept_shards(
    run: &Run<'_>,
    samples: &[SampleSpec],
    plans: &[ShardPlan],
    decided: Vec<commit::Decided>,
    skipped: &mut Vec<Skipped>,
) -> Kept {
    let (format, choice) = (run.format, run.choice);
    let mut warnings = Vec::new();
    let mut shards = Vec::new();
    let mut shards_resumed = 0;
    let mut empty_plans = 0;
    let mut duplicates = Duplicates::default();
    for (plan, decided) in plans.iter().zip(decided) {
        // A plan of duplicates only is no surprise: `--dedup` says what it left out.
        let only_duplicates =
            decided.record.skipped.is_empty() && !decided.record.duplicates.is_empty();
        skipped.extend(decided.record.skipped);
        duplicates.extend(decided.record.duplicates);
        let Some(shard) = decided.record.shard else {
            empty_plans += usize::from(!only_duplicates);
            continue;
        };
        if plan.oversize {
            warnings.push(format!(
                "sample `{}` takes {} bytes in a shard, more than the shard size {}: it gets `{}` to itself",
                samples[plan.samples.start].key,
                plan.bytes - format.shard_overhead(),
                choice.shard_size(),
                shard.entry.path
            ));
        }
        shards_resumed += usize::from(decided.resumed);
        shards.push(shard);
    }
    Kept {
        shards,
        shards_resumed,
        empty_plans,
        warnings,
        duplicates,
    }
}

/// Stages 2 and 3: plans the shards, then writes and commits them.
pub(crate) fn write(
    run: &Run<'_>,
    samples: &[SampleSpec],
    mut skipped: Vec<Skipped>,
) -> Result<Written> {
    let Run {
        source,
        format,
        choice,
        settings,
        observer,
        fingerprint,
        resuming,
        ..
    } = *run;
    let plans = plan::plan(samples, format, choice.shard_size(), settings.max_samples);
    observer.planned(
        samples.len() as u64,
        samples.iter().map(SampleSpec::payload).sum(),
        plans.len(),
    );
    let builder = Mutex::new(format.dataset_builder());
    let seen = settings.dedup.then(Seen::default);
    let job = commit::Job {
        dedup: seen.as_ref(),
        builder: &builder,
        ctx: run.write_context(),
        samples,
        plans: &plans,
        prefix: choice.prefix(),
        fingerprint,
        resuming,
        by_plan: false,
        threads: rayon::current_num_threads(),
    };
    let decided = commit::write_and_commit(&job)?;
    let builder = builder
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);

    let Kept {
        shards,
        shards_resumed,
        empty_plans,
        mut warnings,
        duplicates,
    } = kept_shards(run, samples, &plans, decided, &mut skipped);
    skipped.sort();
    skipped.dedup();
    if shards.is_empty() {
        return Err(shardsmith_shard::Error::EmptyInput {
            root: source.describe(),
            detail: format!(
                ": every sample was left out while writing ({} input file(s)); first: `{}` {}{}",
                skipped.len(),
                skipped.first().map_or("", |s| s.path.as_str()),
                skipped.first().map_or("", |s| s.reason.as_str()),
                validation_note(run.settings.validation),
            ),
        }
        .into());
    }
    if empty_plans > 0 {
        warnings.push(format!(
            "{empty_plans} planned shard(s) would have held only samples that were left out: not written, and the shards after them numbered on"
        ));
    }
    Ok(Written {
        shards,
        builder,
        skipped,
        duplicates: settings.dedup.then_some(duplicates),
        shards_resumed,
        warnings,
    })
}

/// Stage 4: the format's dataset files, then `SHA256SUMS` and, last, the manifest.
pub(crate) fn finish(
    run: &Run<'_>,
    written: Written,
    mut manifest: Manifest,
) -> Result<PackReport> {
    let Run {
        sink,
        format,
        choice,
        ..
    } = *run;
    let Written {
        shards,
        builder,
        skipped,
        duplicates,
        shards_resumed,
        mut warnings,
    } = written;
    let extra = match builder {
        Some(builder) => builder.finish(),
        None => {
            let shard_facts: Vec<(&str, &Value)> = shards
                .iter()
                .map(|r| (r.entry.path.as_str(), &r.facts))
                .collect();
            format.dataset_files(&shard_facts)
        }
    }
    .map_err(|e| Error::Finish(e.to_string()))?;
    manifest.files = shards.into_iter().map(|record| record.entry).collect();
    // Shards of an earlier, interrupted attempt numbered past this run's last one.
    for entry in sink.list()? {
        if state::is_own_shard(&entry, format, choice.prefix())
            && !manifest.files.iter().any(|f| f.path == entry)
        {
            sink.remove(&entry)?;
        }
    }
    manifest.files.extend(write_files(sink, extra)?);
    manifest.skipped = skipped;
    manifest.duplicates = duplicates;
    warnings.extend(shardsmith_store::finish::seal(sink, &mut manifest)?);
    Ok(PackReport {
        shards_written: manifest.files.len() - shards_resumed,
        shards_resumed,
        manifest,
        already_complete: false,
        warnings,
        task: None,
    })
}
