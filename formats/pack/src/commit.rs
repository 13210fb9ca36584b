//! Writing the planned shards in parallel and committing them in plan order.
//!
//! A shard's number is its plan's position among the plans that end up holding a sample.
//! When every sample planned for a shard is left out while writing (content validation
//! failed, an input could not be read), nothing is kept for it and the shards planned
//! after it take the numbers on: the output never holds an empty shard, nor a gap in the
//! numbering. The number of plan `p` is known only once every plan before it is decided,
//! so workers take plans in order and write each under a temporary name, and one
//! committer takes the finished plans in plan order, gives each its number, saves its
//! record and renames it into place while the workers go on. Workers run at most a
//! window of plans ahead of the committer, so the finished shards waiting for an earlier
//! one (open temporary files) stay few whatever a slow shard does.
//!
//! Records are saved in plan order, so those of an interrupted run form a prefix of the
//! plan; a resumed run keeps the longest prefix whose shards are intact and writes the
//! rest, numbering on from there. The numbering depends only on the ordered plans and on
//! which of them came out empty, so a run split across machines can stage its shards by
//! plan and number them the same way once every part is decided.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use super::ahead::Helpers;
use super::dedup::{self, PlanDedup, Seen};
use super::load::WriteContext;
use super::plan::{ShardPlan, plan_digest};
use super::state::{self, PlanRecord};
use super::write::{Written, write_shard};
use crate::{Error, Result};
use shardsmith_manifest::{Duplicate, Duplicates};
use shardsmith_shard::SampleSpec;
use shardsmith_shard::format::DatasetBuilder;

/// One planned shard, decided: written under its number, or left empty.
pub(crate) struct Decided {
    /// What became of the plan (the shard's record holds its final name).
    pub record: PlanRecord,
    /// True when an interrupted run had already decided it.
    pub resumed: bool,
}

/// What the workers and the committer share.
pub(crate) struct Job<'a> {
    pub ctx: WriteContext<'a>,
    pub samples: &'a [SampleSpec],
    pub plans: &'a [ShardPlan],
    pub prefix: &'a str,
    pub fingerprint: &'a str,
    /// Keep what an interrupted run of the same fingerprint decided.
    pub resuming: bool,
    /// Name each shard by its plan's index, not by its place among the kept shards:
    /// one task of a split run, whose shards the final step renumbers if some plan came
    /// out empty ([`crate::task`]).
    pub by_plan: bool,
    /// Worker threads.
    pub threads: usize,
    /// The format's dataset files, built as each shard is committed (under its final
    /// name, so never for a task of a split run).
    pub builder: &'a Mutex<Option<Box<dyn DatasetBuilder>>>,
    /// With `--dedup`: the content digests registered so far ([`crate::dedup`]).
    pub dedup: Option<&'a Seen>,
}

impl Job<'_> {
    /// Gives the committed shard `name` to the dataset files' builder.
    fn build(&self, name: &str, facts: &serde_json::Value) -> Result<()> {
        let mut builder = self
            .builder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(builder) = builder.as_mut() {
            builder
                .add(name, facts)
                .map_err(|e| Error::Finish(e.to_string()))?;
        }
        Ok(())
    }

    fn samples_of(&self, plan: &ShardPlan) -> &[SampleSpec] {
        &self.samples[plan.samples.clone()]
    }

    /// What the writer of `plan` needs to leave duplicates out, if `--dedup` is on.
    fn plan_dedup(&self, plan: &ShardPlan) -> Option<PlanDedup<'_>> {
        self.dedup.map(|seen| PlanDedup {
            seen,
            all: self.samples,
            start: plan.samples.start,
            exclude: BTreeMap::new(),
        })
    }

    /// With `--dedup`, once every plan before `plan` is committed (so every earlier
    /// digest is registered): `written` if it kept no duplicate, else the shard written
    /// again without the duplicates it kept.
    fn recheck(&self, plan: &ShardPlan, written: Written) -> Result<Written> {
        let (Some(seen), Some(digests)) = (self.dedup, &written.digests) else {
            return Ok(written);
        };
        let mut exclude = BTreeMap::new();
        for &(index, digest) in &digests.kept {
            let at = plan.samples.start + index;
            if let Some(first) = seen.first(digest)
                && first < at
                && dedup::same_content(&self.ctx, &self.samples[first], &self.samples[at], None)?
            {
                exclude.insert(index, digest);
            }
        }
        if exclude.is_empty() {
            return Ok(written);
        }
        exclude.extend(digests.dropped.iter().copied());
        // Its temporary file goes before the shard is written again.
        drop(written);
        let again = PlanDedup {
            exclude,
            ..self.plan_dedup(plan).expect("dedup is on")
        };
        write_shard(
            &self.ctx,
            &self.name(plan.index),
            self.samples_of(plan),
            None,
            Some(&again),
        )
    }

    /// What `--dedup` left out of `plan` (written as `digests`), by key.
    fn duplicates(&self, plan: &ShardPlan, digests: Option<&dedup::PlanDigests>) -> Duplicates {
        let mut duplicates = Duplicates::default();
        let (Some(seen), Some(digests)) = (self.dedup, digests) else {
            return duplicates;
        };
        for &(index, digest) in &digests.dropped {
            let sample = &self.samples[plan.samples.start + index];
            let first = seen
                .first(digest)
                .expect("a duplicate's first sample is registered");
            duplicates.add(
                Duplicate {
                    key: sample.key.clone(),
                    of: self.samples[first].key.clone(),
                },
                sample.payload(),
            );
        }
        duplicates
    }

    fn name(&self, number: usize) -> String {
        self.ctx.format.shard_name(self.prefix, number)
    }

    /// The name of `plan`'s shard when `numbered` kept shards come before it.
    fn name_of(&self, plan: &ShardPlan, numbered: usize) -> String {
        self.name(if self.by_plan { plan.index } else { numbered })
    }
}

/// The committer's progress, which bounds how far ahead the workers may run.
struct Window {
    committed: Mutex<usize>,
    moved: Condvar,
    failed: AtomicBool,
    width: usize,
}

impl Window {
    /// Waits until plan `index` is within the window; false when the run has failed.
    fn enter(&self, index: usize) -> bool {
        let mut committed = self
            .committed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while index >= *committed + self.width && !self.failed.load(Ordering::Relaxed) {
            committed = self
                .moved
                .wait(committed)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        !self.failed.load(Ordering::Relaxed)
    }

    fn advance(&self, committed: usize) {
        *self
            .committed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = committed;
        self.moved.notify_all();
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
        let _guard = self.committed.lock();
        self.moved.notify_all();
    }
}

/// Writes and commits every plan; returns what became of each, in plan order.
pub(crate) fn write_and_commit(job: &Job<'_>) -> Result<Vec<Decided>> {
    let mut decided = if job.resuming {
        resumable(job)?
    } else {
        Vec::new()
    };
    let start = decided.len();
    let numbered = decided.iter().filter(|d| d.record.shard.is_some()).count();
    let window = Window {
        committed: Mutex::new(start),
        moved: Condvar::new(),
        failed: AtomicBool::new(false),
        width: 4 * job.threads.max(1),
    };
    let next = AtomicUsize::new(start);
    // Workers with no plan left read ahead for the shards still being written, until
    // every plan is written: a shard whose worker has taken its plan but not yet
    // started it still gets help.
    let helpers = (job.threads > 1).then(Helpers::default);
    let written = AtomicUsize::new(start);
    let (to_commit, finished) = mpsc::channel::<(usize, Written)>();
    let (committed, worker_errors) = std::thread::scope(|scope| {
        let committer = scope.spawn(|| {
            let result = commit_in_order(job, start, numbered, finished, &window);
            if result.is_err() {
                window.fail();
            }
            result
        });
        let workers: Vec<_> = (0..job.threads.max(1))
            .map(|_| {
                let to_commit = to_commit.clone();
                let (next, window, helpers) = (&next, &window, helpers.as_ref());
                let written = &written;
                scope.spawn(move || -> std::result::Result<(), (usize, Error)> {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= job.plans.len() {
                            if let Some(helpers) = helpers {
                                let more = || {
                                    written.load(Ordering::Acquire) < job.plans.len()
                                        && !window.failed.load(Ordering::Relaxed)
                                };
                                helpers.help(&job.ctx, &more);
                            }
                            return Ok(());
                        }
                        if !window.enter(index) {
                            return Ok(());
                        }
                        let plan = &job.plans[index];
                        let samples = job.samples_of(plan);
                        let done = write_shard(
                            &job.ctx,
                            &job.name(plan.index),
                            samples,
                            helpers,
                            job.plan_dedup(plan).as_ref(),
                        );
                        written.fetch_add(1, Ordering::Release);
                        match done {
                            // A send fails only when the committer stopped on an error,
                            // which is returned below; the file is then dropped (removed).
                            Ok(written) => drop(to_commit.send((index, written))),
                            Err(e) => {
                                window.fail();
                                return Err((index, e));
                            }
                        }
                    }
                })
            })
            .collect();
        drop(to_commit);
        let mut errors: Vec<(usize, Error)> = workers
            .into_iter()
            .filter_map(|w| match w.join() {
                Ok(result) => result.err(),
                Err(_) => Some((usize::MAX, Error::Panicked("a pack worker"))),
            })
            .collect();
        errors.sort_by_key(|(index, _)| *index);
        let committed = committer
            .join()
            .unwrap_or(Err(Error::Panicked("the commit thread")));
        (committed, errors)
    });
    // A worker's error is the cause; the committer then only saw the channel close.
    if let Some((_, e)) = worker_errors.into_iter().next() {
        return Err(e);
    }
    decided.extend(committed?);
    Ok(decided)
}

/// The committer: takes finished plans in plan order from `start`, numbers each shard
/// from `numbered` on, records it and renames it into place.
fn commit_in_order(
    job: &Job<'_>,
    start: usize,
    mut numbered: usize,
    finished: mpsc::Receiver<(usize, Written)>,
    window: &Window,
) -> Result<Vec<Decided>> {
    let sink = job.ctx.sink;
    let mut pending: BTreeMap<usize, Written> = BTreeMap::new();
    let mut decided = Vec::with_capacity(job.plans.len() - start);
    let mut next = start;
    for (index, written) in finished {
        pending.insert(index, written);
        while let Some(written) = pending.remove(&next) {
            let plan = &job.plans[next];
            let written = job.recheck(plan, written)?;
            let duplicates = job.duplicates(plan, written.digests.as_ref());
            let digest = plan_digest(job.samples_of(plan));
            let record = match written.shard {
                Some((mut shard, file)) => {
                    let name = job.name_of(plan, numbered);
                    shard.entry.path.clone_from(&name);
                    let record = PlanRecord {
                        shard: Some(shard),
                        skipped: written.skipped,
                        planned: job.name(plan.index),
                        digests: written.digests,
                        duplicates,
                    };
                    state::save_done(sink, job.fingerprint, &digest, plan.index, &record)?;
                    file.commit_as(&name)?;
                    if let Some(shard) = &record.shard {
                        job.build(&name, &shard.facts)?;
                    }
                    numbered += 1;
                    record
                }
                None => {
                    let record = PlanRecord {
                        shard: None,
                        skipped: written.skipped,
                        planned: job.name(plan.index),
                        digests: written.digests,
                        duplicates,
                    };
                    state::save_done(sink, job.fingerprint, &digest, plan.index, &record)?;
                    record
                }
            };
            decided.push(Decided {
                record,
                resumed: false,
            });
            next += 1;
            window.advance(next);
        }
    }
    Ok(decided)
}

/// The plans an interrupted run of this fingerprint decided: the longest prefix whose
/// records match the plan and whose shards are there, intact in size, under the numbers
/// the prefix gives them.
fn resumable(job: &Job<'_>) -> Result<Vec<Decided>> {
    let mut decided = Vec::new();
    let mut numbered = 0;
    for plan in job.plans {
        let samples = job.samples_of(plan);
        let name = job.name_of(plan, numbered);
        let digest = plan_digest(samples);
        let Some(record) =
            state::load_done(job.ctx.sink, job.fingerprint, &digest, plan.index, &name)?
        else {
            break;
        };
        if let Some(seen) = job.dedup {
            // What the interrupted run packed counts as seen; a record without digests
            // is written again (one whose digests do not parse was not loaded).
            let Some(digests) = &record.digests else {
                break;
            };
            for &(index, digest) in &digests.kept {
                seen.register(digest, plan.samples.start + index);
            }
        }
        numbered += usize::from(record.shard.is_some());
        if let Some(shard) = &record.shard {
            job.build(&name, &shard.facts)?;
        }
        job.ctx.observer.advanced(
            samples.len() as u64,
            samples.iter().map(SampleSpec::payload).sum(),
        );
        decided.push(Decided {
            record,
            resumed: true,
        });
    }
    Ok(decided)
}
