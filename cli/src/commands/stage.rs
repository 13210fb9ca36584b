//! `shardsmith stage SRC DST`: copy a dataset, verified on arrival.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use shardsmith_store::Location;
use shardsmith_store::stage::{StageOptions, stage};

use super::Status;
use crate::args::StageArgs;
use crate::output::refuse;
use crate::output::{Printer, seconds};
use crate::progress::Progress as _;
use crate::report;
use crate::size::human_bytes;
use crate::storage::{self, Output, source};

pub fn run(args: &StageArgs, printer: &Printer) -> Result<Status> {
    let started = Instant::now();
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
    let output = Output::create(&dst)?;
    let bar = Arc::new(printer.bytes_bar("staging"));
    let shown = bar.clone();
    let result = stage(
        source(&src).as_ref(),
        output.sink(),
        source(&dst).as_ref(),
        &StageOptions {
            trust_existing: args.trust_existing,
            concurrency,
            accept_unfinished: args.accept_unfinished,
        },
        &move |n| shown.inc(n),
    );
    bar.finish_and_clear();
    let done = result.inspect_err(|_| output.discard_if_unused())?;
    let elapsed = started.elapsed();
    let mut text = format!(
        "staged {} files ({}) from {} to {} in {}: {} copied ({}), {} already there\n",
        done.files,
        human_bytes(done.bytes),
        src.display(),
        dst.display(),
        seconds(elapsed),
        done.copied,
        human_bytes(done.bytes_copied),
        done.kept,
    );
    if done.had_manifest {
        text.push_str("  verified  every file's SHA-256 against the source manifest\n");
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
    printer.summary(&text);
    printer.report(&report::Stage {
        bytes_copied: done.bytes_copied,
        command: "stage",
        complete: done.complete,
        dst: dst.display(),
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
        seconds: elapsed.as_secs_f64(),
        src: src.display(),
        total_bytes: done.bytes,
        version: report::VERSION,
    });
    Ok(if done.complete {
        Status::Clean
    } else {
        Status::Problems
    })
}
