//! `pack`: raw files or rows → shards of a target size, plus `manifest.json` and
//! `SHA256SUMS`.
//!
//! Owns: the pack pipeline, in named stages that [`pack`] runs in order:
//! 1. **list** ([`list`]): list the input and group files into samples ([`group`]);
//!    names readers would mis-key and samples the format cannot hold are left out with
//!    the reason; optionally shuffle (deterministically) and keep one part.
//! 2. **plan** ([`plan`]): the shards from file sizes; every shard's content is fixed
//!    before anything is written.
//! 3. **write** ([`commit`]): the shards in parallel, each to a temporary name, hashing
//!    while writing, then numbered, recorded, fsynced and renamed in plan order: a
//!    planned shard whose samples were all left out is not kept and the next one takes
//!    its number; the records let a killed run resume.
//! 4. **finish**: the format's dataset files, `SHA256SUMS` and, last, `manifest.json`
//!    (`shardsmith_store::finish`).
//!
//! A run can be split into tasks that share one output ([`task`]: each writes its share
//! of the same global plan; `merge` finishes the dataset). Also [`merge`], which
//! combines datasets packed separately into part directories.
//!
//! Must not know: any format's internals (only `ShardFormat` and the registry), token
//! files, checkpoints, or the command line. The output depends only on the input and
//! the settings, never on the thread count.

mod commit;
mod error;
mod group;
pub mod images;
mod left_out;
pub mod merge;
mod observer;
pub mod plan;
mod run;
mod settings;
mod shuffle;
pub mod state;
pub mod task;
pub mod tree;
mod write;

use rayon::prelude::*;
use serde_json::Value;
use shardsmith_manifest::Skipped;
use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, InputSummary, Manifest, ManifestKind, sha256_hex};
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::{FormatChoice, SampleSpec, ShardFormat};
use shardsmith_store::OutputSink;
use shardsmith_store::resume::{self, Start};

pub use self::error::{Error, Result};
use self::left_out::{first_cause, validation_note};
pub use self::observer::{NoProgress, PackObserver};
pub use self::plan::ShardPlan;
use self::run::Run;
pub use self::run::{PackReport, TaskReport};
pub use self::settings::{PackSettings, TaskId};

/// Packs the samples of `source` into `sink` in the chosen format.
pub fn pack(
    source: &dyn SampleSource,
    sink: &dyn OutputSink,
    choice: &FormatChoice,
    settings: &PackSettings,
    observer: &dyn PackObserver,
) -> Result<PackReport> {
    settings.check()?;
    let images = match &settings.images {
        Some(image_settings) => Some(
            images::ImageSource::new(
                source,
                observer,
                image_settings,
                images::Target::for_format(choice.kind().name()),
                settings.validation,
                settings.fields.as_ref(),
            )
            .map_err(|e| Error::io("creating", &image_settings.scratch, e))?,
        ),
        None => None,
    };
    let source: &dyn SampleSource = match &images {
        Some(images) => images,
        None => source,
    };
    let Listed {
        samples,
        skipped,
        format,
    } = list(source, choice, settings)?;
    let format = format.as_ref();

    let mut manifest = Manifest::new(ManifestKind::Pack, DEFAULT_CHUNK_SIZE, Vec::new());
    manifest.format = Some(format.name().to_string());
    manifest.options = settings.options(choice, format);
    manifest.input = Some(match &images {
        Some(images) => {
            let originals: Vec<SampleSpec> =
                samples.iter().map(|s| images.original(s).clone()).collect();
            input_summary(images.inner(), &originals)
        }
        None => input_summary(source, &samples),
    });
    let fingerprint = resume::fingerprint(&manifest, None);

    if let Some(task) = &settings.task {
        let run = Run {
            source,
            sink,
            format,
            choice,
            settings,
            observer,
            fingerprint: &fingerprint,
            resuming: true,
        };
        manifest.skipped = skipped;
        // No clean-up on failure: the other tasks share the output and its state.
        return task::pack_share(&run, task, &samples, manifest);
    }

    let _lock = sink.lock()?;
    let resuming = match state::prepare(
        sink,
        &manifest,
        &fingerprint,
        format,
        choice.prefix(),
        settings.force,
    )? {
        Start::Complete(existing) => {
            return Ok(PackReport {
                manifest: *existing,
                shards_written: 0,
                shards_resumed: 0,
                already_complete: true,
                warnings: Vec::new(),
                task: None,
            });
        }
        Start::Resume => true,
        Start::Fresh => false,
    };

    let run = Run {
        source,
        sink,
        format,
        choice,
        settings,
        observer,
        fingerprint: &fingerprint,
        resuming,
    };
    let result = write(&run, &samples, skipped)
        .map(|mut written| {
            if let Some(images) = &images {
                written.warnings.extend(images.warnings());
            }
            written
        })
        .and_then(|written| finish(&run, written, manifest));
    if result.is_err() {
        // Nothing committed: the output is left as it was, not locked by a run that
        // cannot be finished. Otherwise the state stays for a resume.
        state::abandon(sink, format, choice.prefix());
    }
    result
}

/// The samples to pack, in the order they go into shards, with the format built for
/// them.
struct Listed {
    samples: Vec<SampleSpec>,
    skipped: Vec<Skipped>,
    format: Box<dyn ShardFormat>,
}

/// Stage 1: lists the samples, leaves out those neither readers nor the format can
/// take, then shuffles.
fn list(
    source: &dyn SampleSource,
    choice: &FormatChoice,
    settings: &PackSettings,
) -> Result<Listed> {
    let listing = source.samples()?;
    let mut skipped = listing.skipped;
    let mut samples = listing.samples;
    // With images, the source applied `--fields` to the input's names.
    if let Some(fields) = settings
        .fields
        .as_ref()
        .filter(|_| settings.images.is_none())
    {
        for sample in &mut samples {
            sample.fields.retain(|f| fields.contains(&*f.ext));
        }
        samples.retain(|s| !s.fields.is_empty());
    }
    // Two samples with one key would be merged or confused by readers: refused here,
    // for every kind of input, naming both.
    shardsmith_shard::keys::check_unique(source, &samples, settings.key_prefix)?;
    let format = choice.build(&samples, source.suggested_encodings())?;
    refine(source, format.as_ref(), &mut samples, &mut skipped);
    skipped.sort();
    skipped.dedup();
    if settings.strict
        && let Some(first) = first_cause(&skipped)
    {
        return Err(Error::Strict {
            path: first.path.clone(),
            reason: first.reason.clone(),
            count: skipped.len(),
        });
    }
    if samples.is_empty() {
        let detail = match skipped.first() {
            Some(first) => format!(
                ": all {} input file(s) were left out; first: `{}` {}{}",
                skipped.len(),
                first.path,
                first.reason,
                validation_note(settings.validation)
            ),
            None => ": it holds no files".into(),
        };
        return Err(shardsmith_shard::Error::EmptyInput {
            root: source.describe(),
            detail,
        }
        .into());
    }
    if let Some(seed) = settings.shuffle_seed {
        if let Some(why) = source.shuffle_refusal() {
            return Err(Error::Setting(format!("--shuffle: {why}")));
        }
        shuffle::shuffle(&mut samples, seed);
    }
    Ok(Listed {
        samples,
        skipped,
        format,
    })
}

/// The shards written (or kept from an interrupted run), in order.
struct Written {
    shards: Vec<state::ShardRecord>,
    skipped: Vec<Skipped>,
    shards_resumed: usize,
    warnings: Vec<String>,
}

/// Stages 2 and 3: plans the shards, then writes and commits them.
fn write(run: &Run<'_>, samples: &[SampleSpec], mut skipped: Vec<Skipped>) -> Result<Written> {
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
    let job = commit::Job {
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

    let mut warnings = Vec::new();
    let mut shards = Vec::new();
    let mut shards_resumed = 0;
    let mut empty_plans = 0;
    for (plan, decided) in plans.iter().zip(decided) {
        skipped.extend(decided.record.skipped);
        let Some(shard) = decided.record.shard else {
            empty_plans += 1;
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
        skipped,
        shards_resumed,
        warnings,
    })
}

/// Stage 4: the format's dataset files, then `SHA256SUMS` and, last, the manifest.
fn finish(run: &Run<'_>, written: Written, mut manifest: Manifest) -> Result<PackReport> {
    let Run {
        sink,
        format,
        choice,
        ..
    } = *run;
    let Written {
        shards,
        skipped,
        shards_resumed,
        mut warnings,
    } = written;
    let shard_facts: Vec<(&str, &Value)> = shards
        .iter()
        .map(|r| (r.entry.path.as_str(), &r.facts))
        .collect();
    let extra = format
        .dataset_files(&shard_facts)
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
    for file in extra {
        manifest.files.push(shardsmith_store::finish::write_entry(
            sink,
            &file.name,
            &file.bytes,
        )?);
    }
    manifest.skipped = skipped;
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

/// Leaves out samples the format cannot hold and sets the encoded size of fields the
/// format sizes by their header (read in parallel).
fn refine(
    source: &dyn SampleSource,
    format: &dyn ShardFormat,
    samples: &mut Vec<SampleSpec>,
    skipped: &mut Vec<Skipped>,
) {
    let outcomes: Vec<Option<String>> = samples
        .par_iter_mut()
        .map(|sample| {
            if let Some(reason) = format.refuse(sample) {
                return Some(reason);
            }
            for i in 0..sample.fields.len() {
                let n = format.peek_len(&sample.fields[i].ext);
                if n == 0 {
                    continue;
                }
                let field = &sample.fields[i];
                let sized = source.head(sample, field, n).and_then(|head| {
                    format
                        .encoded_len(&field.ext, field.size, &head)
                        .map_err(|e| e.to_string())
                });
                match sized {
                    Ok(encoded) => sample.fields[i].encoded = encoded,
                    Err(reason) => {
                        return Some(format!("field `{}`: {reason}", sample.fields[i].ext));
                    }
                }
            }
            None
        })
        .collect();
    let mut kept = Vec::with_capacity(samples.len());
    for (sample, outcome) in std::mem::take(samples).into_iter().zip(outcomes) {
        match outcome {
            None => kept.push(sample),
            Some(reason) => skipped.extend(sample.fields.iter().map(|f| Skipped {
                path: source.field_path(&sample, f),
                reason: reason.clone(),
            })),
        }
    }
    *samples = kept;
}

fn input_summary(source: &dyn SampleSource, samples: &[SampleSpec]) -> InputSummary {
    let mut lines = Vec::new();
    let (mut files, mut bytes) = (0u64, 0u64);
    for (sample, field) in samples
        .iter()
        .flat_map(|s| s.fields.iter().map(move |f| (s, f)))
    {
        lines.extend_from_slice(source.field_path(sample, field).as_bytes());
        lines.push(0);
        lines.extend_from_slice(field.size.to_string().as_bytes());
        lines.push(b'\n');
        files += 1;
        bytes += field.size;
    }
    InputSummary {
        files,
        bytes,
        listing_sha256: sha256_hex(&lines),
    }
}

#[cfg(test)]
mod tests;
