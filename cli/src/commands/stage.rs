//! `shardsmith stage SRC DST`: copy a dataset, verified on arrival.
//!
//! [`Settings::resolve`] names both locations and refuses a copy onto itself before
//! anything is read; [`run`] copies; the [`Staged`] outcome renders as the summary and
//! as the `--json` report.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use shardsmith_store::Location;
use shardsmith_store::stage::{DEFAULT_CHUNK_MEMORY, StageOptions, StageReport, stage};

use super::Status;
use crate::args::StageArgs;
use crate::output::refuse;
use crate::output::{Printer, seconds};
use crate::progress::Progress;
use crate::report;
use crate::size::human_bytes;
use crate::storage::{self, Output, source};

/// What `stage` copies where, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    src: Location,
    dst: Location,
    options: StageOptions,
}

impl Settings {
    /// Names both locations (a local source must be a directory) and refuses a copy
    /// onto itself.
    pub fn resolve(args: &StageArgs) -> Result<Self> {
        let src = storage::location(&args.src)?;
        if let Location::Local(path) = &src {
            crate::output::need_directory(path)?;
        }
        let dst = storage::location(&args.dst)?;
        if src.display() == dst.display() {
            refuse!(
                OutputConflict,
                "SRC and DST are the same location `{}`",
                src.display()
            );
        }
        let concurrency = match &src {
            Location::Remote(remote) => remote.io_concurrency().min(32),
            Location::Local(_) => 4,
        };
        Ok(Self {
            src,
            dst,
            options: StageOptions {
                trust_existing: args.trust_existing,
                concurrency,
                accept_unfinished: args.accept_unfinished,
                chunk_memory: DEFAULT_CHUNK_MEMORY,
                chunks_from_files: false,
            },
        })
    }
}

/// What a stage did.
#[derive(Debug)]
pub struct Staged {
    src: String,
    dst: String,
    done: StageReport,
    elapsed: Duration,
}

/// Copies the dataset, each file verified on arrival, showing progress on `progress`.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Staged> {
    let started = Instant::now();
    let output = Output::create(&settings.dst)?;
    let bar = Arc::new(progress.bytes_bar("staging"));
    let shown = bar.clone();
    let result = stage(
        source(&settings.src).as_ref(),
        output.sink(),
        source(&settings.dst).as_ref(),
        &settings.options,
        &move |n| shown.inc(n),
    );
    bar.finish_and_clear();
    let done = result.inspect_err(|_| output.discard_if_unused())?;
    Ok(Staged {
        src: settings.src.display(),
        dst: settings.dst.display(),
        done,
        elapsed: started.elapsed(),
    })
}

impl Staged {
    /// Clean when every file arrived as the manifest says.
    pub fn status(&self) -> Status {
        if self.done.complete {
            Status::Clean
        } else {
            Status::Problems
        }
    }

    /// The human summary.
    pub fn text(&self) -> String {
        let done = &self.done;
        let mut text = format!(
            "staged {} files ({}) from {} to {} in {}: {} copied ({}), {} already there\n",
            done.files,
            human_bytes(done.bytes),
            self.src,
            self.dst,
            seconds(self.elapsed),
            done.copied,
            human_bytes(done.bytes_copied),
            done.kept,
        );
        if done.had_manifest {
            text.push_str("  verified  every file's SHA-256 against the source manifest");
            if done.chunked > 0 {
                text.push_str(&format!(
                    "; {} large file(s) checked by {} chunks as they arrived",
                    done.chunked,
                    chunk_name(done.chunk_size)
                ));
            }
            text.push('\n');
        } else {
            text.push_str("  manifest  written for what was copied (the source had none)\n");
        }
        for m in &done.mismatches {
            let range = m
                .range
                .map(|(a, b)| format!(" (first difference in bytes {a}..{b})"))
                .unwrap_or_default();
            text.push_str(&format!("  MISMATCH  {}: {}{range}\n", m.path, m.reason));
        }
        if done.complete {
            text.push_str(&format!("  root      {}\n", done.root_sha256));
        } else {
            text.push_str(&format!(
                "  incomplete: {} file(s) did not match and were not kept; no manifest was written at the destination\n",
                done.mismatches.len()
            ));
        }
        text
    }

    /// The `--json` report.
    pub fn report(&self) -> report::Stage {
        let done = &self.done;
        report::Stage {
            bytes_copied: done.bytes_copied,
            command: "stage",
            complete: done.complete,
            dst: self.dst.clone(),
            files: done.files,
            files_copied: done.copied,
            files_kept: done.kept,
            had_manifest: done.had_manifest,
            mismatches: done
                .mismatches
                .iter()
                .map(|m| report::StageMismatch {
                    bytes: m.range.map(|(a, b)| [a, b]),
                    path: m.path.clone(),
                    reason: m.reason.clone(),
                })
                .collect(),
            root_sha256: done.root_sha256.clone(),
            seconds: self.elapsed.as_secs_f64(),
            src: self.src.clone(),
            total_bytes: done.bytes,
            version: report::VERSION,
        }
    }
}

/// A chunk size as the manifest's chunk lists are described (`64 MiB`).
fn chunk_name(bytes: u64) -> String {
    if bytes > 0 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes}-byte")
    }
}

/// The command: resolve, run, print.
pub fn main(args: &StageArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args)?;
    let staged = run(&settings, printer)?;
    printer.summary(&staged.text());
    printer.report(&staged.report());
    Ok(staged.status())
}
