//! `diff`'s settings, run and outcome.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use shardsmith_checkpoint::tensors::diff::{
    DiffOptions, DiffReport, EntryReport, diff, diff_entries,
};
use shardsmith_checkpoint::tensors::{self, MapRules};

use crate::args::DiffArgs;
use crate::commands::Status;
use crate::report;

/// What `diff` compares, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    a: PathBuf,
    b: PathBuf,
    map: MapRules,
    values: bool,
}

impl Settings {
    /// Reads and checks the `--map` rules (a bad rule fails before a checkpoint is read).
    pub fn resolve(args: &DiffArgs) -> Result<Self> {
        let map = match &args.map {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading the map `{}`", path.display()))?;
                MapRules::parse(&text, &path.display().to_string())?
            }
            None => MapRules::default(),
        };
        Ok(Self {
            a: args.a.clone(),
            b: args.b.clone(),
            map,
            values: args.values,
        })
    }
}

/// What a comparison found.
#[derive(Debug)]
pub struct Diffed {
    /// A and B, as given.
    pub(super) a: String,
    pub(super) b: String,
    /// The tensors' differences.
    pub(super) found: DiffReport,
    /// The values beside the tensors.
    pub(super) entries: EntryReport,
    /// Bytes of A's tensors.
    bytes: u64,
    elapsed: Duration,
}

/// Opens both checkpoints and compares them.
pub fn run(settings: &Settings) -> Result<Diffed> {
    let started = Instant::now();
    let a = tensors::open_all(&settings.a)?;
    let b = tensors::open_all(&settings.b)?;
    let entries = diff_entries(&a.entries, &b.entries, &settings.map);
    let (a, b) = (a.tensors, b.tensors);
    let options = DiffOptions {
        values: settings.values,
        map: settings.map.clone(),
    };
    let found = diff(&a, &b, &options)?;
    Ok(Diffed {
        a: settings.a.display().to_string(),
        b: settings.b.display().to_string(),
        bytes: a.iter().map(|t| t.bytes().unwrap_or(0)).sum(),
        found,
        entries,
        elapsed: started.elapsed(),
    })
}

impl Diffed {
    /// Clean when the weights are the same.
    pub fn status(&self) -> Status {
        if self.found.identical() {
            Status::Clean
        } else {
            Status::Problems
        }
    }

    /// The `--json` report.
    pub fn report(&self) -> report::Diff {
        let found = &self.found;
        report::Diff {
            a: self.a.clone(),
            b: self.b.clone(),
            bytes: self.bytes,
            changed: found.changed.iter().map(Into::into).collect(),
            command: "diff",
            entries: (&self.entries).into(),
            identical: found.identical(),
            only_a: found.only_a.iter().map(Into::into).collect(),
            only_b: found.only_b.iter().map(Into::into).collect(),
            same: found.same,
            seconds: self.elapsed.as_secs_f64(),
            version: report::VERSION,
        }
    }
}
