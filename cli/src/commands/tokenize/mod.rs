//! `shardsmith tokenize`: resolve the arguments, load the tokenizer, run the pipeline
//! with a progress bar, report.

mod settings;
mod text;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_tokens::TokenizeObserver;

use super::Status;
use crate::args::TokenizeArgs;
use crate::output::{Printer, seconds};
use crate::progress::Progress as _;
use crate::report;
use crate::size::human_bytes;
use crate::storage::Output;
use settings::{Resolved, resolve};
use text::{json_report, summary};

struct Progress {
    bar: crate::progress::Bar,
    counts: Arc<Counts>,
}

/// Documents and tokens done, read by the bar when it draws.
struct Counts {
    documents: AtomicU64,
    tokens: AtomicU64,
    started: Instant,
}

impl Progress {
    fn new(printer: &Printer) -> Self {
        let counts = Arc::new(Counts {
            documents: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            started: Instant::now(),
        });
        let shown = counts.clone();
        let bar = printer.bytes_bar_with(
            "tokenizing",
            Arc::new(move || {
                let docs = shown.documents.load(Ordering::Relaxed);
                let toks = shown.tokens.load(Ordering::Relaxed);
                let secs = shown.started.elapsed().as_secs_f64();
                if secs < 1.0 {
                    return format!("{docs} docs, {toks} tokens");
                }
                format!(
                    "{docs} docs, {toks} tokens ({:.0} docs/s, {:.2} M tokens/s)",
                    docs as f64 / secs,
                    toks as f64 / secs / 1e6
                )
            }),
        );
        Self { bar, counts }
    }
}

impl TokenizeObserver for Progress {
    fn planned(&self, input_bytes: u64) {
        self.bar.set_total(input_bytes);
    }

    fn advanced(&self, documents: u64, input_bytes: u64, tokens: u64) {
        self.counts
            .documents
            .fetch_add(documents, Ordering::Relaxed);
        self.counts.tokens.fetch_add(tokens, Ordering::Relaxed);
        self.bar.inc(input_bytes);
    }
}

pub fn run(args: &TokenizeArgs, printer: &Printer) -> Result<Status> {
    let started = Instant::now();
    let resolved = resolve(args)?;
    let output = Output::create(&resolved.output)?;
    if let Some(task) = &resolved.task {
        return run_task(&resolved, task, &output, printer, started);
    }
    let progress = Progress::new(printer);
    let result = shardsmith_tokens::tokenize(
        &resolved.inputs,
        output.sink(),
        &resolved.tokenizer,
        &resolved.settings,
        &progress,
    );
    progress.bar.finish_and_clear();
    let report = result.map_err(|e| super::after_failure(e.into(), &output))?;
    let elapsed = started.elapsed();
    for warning in &report.warnings {
        printer.warn(warning);
    }
    for skip in &report.manifest.skipped {
        printer.detail(&format!("skipped `{}`: {}", skip.path, skip.reason));
    }
    if let Some(total) = report.manifest.skipped_total
        && !printer.verbose()
    {
        printer.warn(&format!(
            "{total} malformed record(s) left out; the first ones are listed with the reason under \"skipped\" in {} (-v shows them, --strict makes them errors)",
            output.show(MANIFEST_FILE)
        ));
    }
    printer.summary(&summary(&report, &resolved, &output, elapsed));
    printer.report(&json_report(&report, &resolved, &output, elapsed));
    Ok(Status::Clean)
}

/// One task of a split run: its share of the input files, into the shared output.
fn run_task(
    resolved: &Resolved,
    task: &shardsmith_store::tasks::TaskId,
    output: &Output,
    printer: &Printer,
    started: Instant,
) -> Result<Status> {
    printer.note(&format!(
        "task {} of {} (from {})",
        task.index, task.count, task.source
    ));
    let progress = Progress::new(printer);
    let result = shardsmith_tokens::task::tokenize_share(
        &resolved.inputs,
        output.sink(),
        &resolved.tokenizer,
        &resolved.settings,
        task,
        &progress,
    );
    progress.bar.finish_and_clear();
    let report = result.map_err(|e| super::after_failure(e.into(), output))?;
    let (files, all) = &report.inputs;
    let files = match files {
        Some((first, last)) if first == last => format!("input file {first}"),
        Some((first, last)) => format!("input files {first}..={last}"),
        None => "no input".to_string(),
    };
    let mut text = if report.already_complete {
        format!(
            "already complete: {} holds this dataset; nothing to do\n",
            output.show("")
        )
    } else {
        format!(
            "task {} of {}: {files} of {all} ({} of {}): {} documents, {} tokens in {} file(s){} in {}\n  then, once every task has finished: shardsmith merge {}\n",
            task.index,
            task.count,
            human_bytes(report.bytes.0),
            human_bytes(report.bytes.1),
            report.documents,
            report.tokens,
            report.written + report.resumed,
            if report.resumed > 0 {
                format!(" ({} kept from an interrupted attempt)", report.resumed)
            } else {
                String::new()
            },
            seconds(started.elapsed()),
            output.show("")
        )
    };
    if printer.verbose() {
        text.push_str(&format!("  source    {}\n", task.source));
    }
    printer.summary(&text);
    printer.report(&report::TokenizeTask {
        already_complete: report.already_complete,
        command: "tokenize",
        documents: report.documents,
        files_resumed: report.resumed,
        files_written: report.written,
        input_files: report.inputs.0.map(|(a, b)| [a, b]),
        seconds: started.elapsed().as_secs_f64(),
        task: task.index,
        task_count: task.count,
        task_source: &task.source,
        tokens: report.tokens,
        version: report::VERSION,
    });
    Ok(Status::Clean)
}
