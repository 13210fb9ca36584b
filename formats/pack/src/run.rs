//! What a `pack` run is given after listing ([`Run`]) and what it reports
//! ([`PackReport`]), shared by the single run and the tasks of a split run.

use std::ops::Range;

use shardsmith_manifest::Manifest;
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::{FormatChoice, ShardFormat};
use shardsmith_store::OutputSink;

use crate::load::WriteContext;
use crate::observer::PackObserver;
use crate::settings::{PackSettings, TaskId};

/// What a `pack` run did.
#[derive(Clone, Debug)]
pub struct PackReport {
    /// The manifest written (or found complete).
    pub manifest: Manifest,
    /// Shards written by this run.
    pub shards_written: usize,
    /// Shards kept from an interrupted run.
    pub shards_resumed: usize,
    /// The output already held this exact dataset; nothing was written.
    pub already_complete: bool,
    /// Things worth telling the user (oversize samples, ...).
    pub warnings: Vec<String>,
    /// Set when this run was one task of a split run: its share. The manifest is then
    /// the one every task would write, without files; `merge` writes the real one.
    pub task: Option<TaskReport>,
}

impl PackReport {
    /// The report of a run that found the output already complete: nothing written.
    pub(crate) fn complete(manifest: Manifest) -> Self {
        PackReport {
            manifest,
            shards_written: 0,
            shards_resumed: 0,
            already_complete: true,
            warnings: Vec::new(),
            task: None,
        }
    }
}

/// What one task of a split run did.
#[derive(Clone, Debug)]
pub struct TaskReport {
    /// Which task, of how many, and where that was read.
    pub task: TaskId,
    /// Its plans (indices into the global plan).
    pub plans: Range<usize>,
    /// Plans in the whole run.
    pub total_plans: usize,
    /// Bytes its share holds, and bytes in the whole plan.
    pub bytes: (u64, u64),
}

/// What the stages after listing need besides the samples.
pub(crate) struct Run<'a> {
    pub source: &'a dyn SampleSource,
    pub sink: &'a dyn OutputSink,
    pub format: &'a dyn ShardFormat,
    pub choice: &'a FormatChoice,
    pub settings: &'a PackSettings,
    pub observer: &'a dyn PackObserver,
    pub fingerprint: &'a str,
    pub resuming: bool,
}

impl Run<'_> {
    pub(crate) fn write_context(&self) -> WriteContext<'_> {
        WriteContext {
            source: self.source,
            sink: self.sink,
            format: self.format,
            validation: self.settings.validation,
            strict: self.settings.strict,
            observer: self.observer,
        }
    }
}
