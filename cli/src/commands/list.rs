//! `shardsmith list INPUT [-o LIST]`: the files `pack` would read, with their sizes, as
//! a list `pack --files-from` reads back (one listing shared by the tasks of a split run).
//!
//! [`Settings::resolve`] checks INPUT and the flags before anything is listed; [`run`]
//! lists INPUT and writes LIST; the [`Listed`] outcome renders as the summary, as the
//! `--json` report, and (without `-o`) as the list itself on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use shardsmith_manifest::Skipped;
use shardsmith_store::{Location, files_from};

use super::Status;
use crate::args::ListArgs;
use crate::output::refuse;
use crate::output::{Printer, seconds};
use crate::report;
use crate::size::human_bytes;
use crate::storage;

/// What `list` lists where, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    input: Location,
    output: Option<PathBuf>,
}

impl Settings {
    /// A local INPUT must be a directory; `--json` (`json`) needs `-o LIST`, since
    /// without it the list itself is what goes to stdout.
    pub fn resolve(args: &ListArgs, json: bool) -> Result<Self> {
        if json && args.output.is_none() {
            refuse!(
                Usage,
                "--json needs -o LIST: without it the list itself is what goes to stdout"
            );
        }
        let input = storage::location(&args.input)?;
        if let Location::Local(path) = &input {
            crate::output::need_directory(path)?;
        }
        Ok(Self {
            input,
            output: args.output.clone(),
        })
    }
}

/// What a listing found.
#[derive(Debug)]
pub struct Listed {
    input: String,
    /// LIST, when the list was written to it.
    output: Option<PathBuf>,
    /// The list as `pack --files-from` reads it.
    pub list: String,
    files: usize,
    bytes: u64,
    /// What was left out, as `pack` leaves it out.
    pub skipped: Vec<Skipped>,
    elapsed: Duration,
}

/// Lists INPUT and writes the list to LIST when one is named.
pub fn run(settings: &Settings) -> Result<Listed> {
    let started = Instant::now();
    let listing = storage::source(&settings.input).list()?;
    let list = files_from::render(&listing.files);
    if let Some(output) = &settings.output {
        storage::write_small(output, list.as_bytes())?;
    }
    Ok(Listed {
        input: settings.input.display(),
        output: settings.output.clone(),
        list,
        files: listing.files.len(),
        bytes: listing.files.iter().map(|f| f.size).sum(),
        skipped: listing.skipped,
        elapsed: started.elapsed(),
    })
}

impl Listed {
    /// The human summary (`None` when the list itself went to stdout).
    pub fn text(&self) -> Option<String> {
        let output = self.output.as_ref()?;
        Some(format!(
            "listed {} files ({}) of {} into {} in {}\n",
            self.files,
            human_bytes(self.bytes),
            self.input,
            output.display(),
            seconds(self.elapsed),
        ))
    }

    /// The `--json` report (`None` when the list itself went to stdout).
    pub fn report(&self) -> Option<report::List<'_>> {
        Some(report::List {
            bytes: self.bytes,
            command: "list",
            files: self.files,
            input: self.input.clone(),
            list: self.output.as_ref()?.display().to_string(),
            seconds: self.elapsed.as_secs_f64(),
            skipped: &self.skipped,
            version: report::VERSION,
        })
    }
}

/// The command: resolve, run, print (the left-out inputs first, as `pack` warns of
/// them: the first five, or all with -v).
pub fn main(args: &ListArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args, printer.json())?;
    let listed = run(&settings)?;
    let shown = if printer.verbose() { usize::MAX } else { 5 };
    for skip in listed.skipped.iter().take(shown) {
        printer.warn(&format!("`{}` left out: {}", skip.path, skip.reason));
    }
    if listed.skipped.len() > shown {
        printer.warn(&format!(
            "... {} more left out (-v lists them all)",
            listed.skipped.len() - shown
        ));
    }
    match (listed.text(), listed.report()) {
        (Some(text), Some(report)) => {
            printer.summary(&text);
            printer.report(&report);
        }
        _ => {
            let mut out = std::io::stdout().lock();
            out.write_all(listed.list.as_bytes())
                .and_then(|()| out.flush())
                .context("writing the list to stdout")?;
        }
    }
    Ok(Status::Clean)
}
