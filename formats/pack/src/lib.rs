//! `pack`: raw files or rows → shards of a target size, plus `manifest.json` and
//! `SHA256SUMS`.
//!
//! Owns: the pack pipeline, in named stages that [`pack`] runs in order:
//! 1. **list** ([`listing`]): list the input and group files into samples ([`group`]);
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

mod ahead;
mod commit;
pub mod dedup;
mod error;
mod group;
pub mod images;
mod left_out;
mod listing;
mod load;
pub mod merge;
mod merge_energon;
mod observer;
pub mod plan;
mod run;
mod settings;
mod shards;
mod shuffle;
pub mod state;
pub mod task;
pub mod tree;
mod write;

use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, Manifest, ManifestKind};
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::{FormatChoice, SampleSpec, ShardFormat};
use shardsmith_store::OutputSink;
use shardsmith_store::resume::{self, Start};

pub use self::error::{Error, Result};
use self::listing::{Listed, input_summary, list};
pub use self::observer::{NoProgress, PackObserver};
pub use self::plan::ShardPlan;
use self::run::Run;
pub use self::run::{PackReport, TaskReport};
pub use self::settings::{PackSettings, TaskId};
use self::shards::{finish, write};

/// Packs the samples of `source` into `sink` in the chosen format.
pub fn pack(
    source: &dyn SampleSource,
    sink: &dyn OutputSink,
    choice: &FormatChoice,
    settings: &PackSettings,
    observer: &dyn PackObserver,
) -> Result<PackReport> {
    settings.check()?;
    let images = image_source(source, choice, settings, observer)?;
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
    let mut manifest = new_manifest(source, images.as_ref(), &samples, choice, settings, format);
    let fingerprint = resume::fingerprint(&manifest, None);
    let mut run = Run {
        source,
        sink,
        format,
        choice,
        settings,
        observer,
        fingerprint: &fingerprint,
        resuming: true,
    };

    if let Some(task) = &settings.task {
        manifest.skipped = skipped;
        // No clean-up on failure: the other tasks share the output and its state.
        return task::pack_share(&run, task, &samples, manifest);
    }

    let _lock = sink.lock()?;
    run.resuming = match state::prepare(
        sink,
        &manifest,
        &fingerprint,
        format,
        choice.prefix(),
        settings.force,
    )? {
        Start::Complete(existing) => return Ok(PackReport::complete(*existing)),
        Start::Resume => true,
        Start::Fresh => false,
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

/// The source that prepares images on the way (`--images`), over `source`.
fn image_source<'a>(
    source: &'a dyn SampleSource,
    choice: &FormatChoice,
    settings: &'a PackSettings,
    observer: &'a dyn PackObserver,
) -> Result<Option<images::ImageSource<'a>>> {
    let Some(image_settings) = &settings.images else {
        return Ok(None);
    };
    images::ImageSource::new(
        source,
        observer,
        image_settings,
        images::Target::for_format(choice.kind().name()),
        settings.validation,
        settings.fields.as_ref(),
    )
    .map(Some)
    .map_err(|e| Error::io("creating", &image_settings.scratch, e))
}

/// The manifest of the run before any shard: the format, the options, and the input
/// (the original files where images were prepared).
fn new_manifest(
    source: &dyn SampleSource,
    images: Option<&images::ImageSource<'_>>,
    samples: &[SampleSpec],
    choice: &FormatChoice,
    settings: &PackSettings,
    format: &dyn ShardFormat,
) -> Manifest {
    let mut manifest = Manifest::new(ManifestKind::Pack, DEFAULT_CHUNK_SIZE, Vec::new());
    manifest.format = Some(format.name().to_string());
    manifest.options = settings.options(choice, format);
    manifest.input = Some(match images {
        Some(images) => {
            let originals: Vec<SampleSpec> =
                samples.iter().map(|s| images.original(s).clone()).collect();
            input_summary(images.inner(), &originals)
        }
        None => input_summary(source, samples),
    });
    manifest
}

#[cfg(test)]
mod tests;
