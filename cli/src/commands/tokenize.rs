//! `shardsmith tokenize`: resolve the arguments, load the tokenizer, run the pipeline
//! with a progress bar, report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_store::{Location, ObjectTree};
use shardsmith_tokens::{
    InputRoot, TextInput, TokenFormat, TokenizeObserver, TokenizeReport, TokenizeSettings,
    Tokenizer, TokenizerSpec,
};

use super::{Status, brace_pattern};
use crate::args::{TokenFormatArg, TokenizeArgs};
use crate::output::refuse;
use crate::output::{Printer, manifest_lines, resumed_line, seconds, skipped_lines};
use crate::progress::Progress as _;
use crate::report;
use crate::size::human_bytes;
use crate::storage::{self, Output};

/// `tokenize` arguments resolved and checked before any output is touched.
struct Resolved {
    inputs: Vec<TextInput>,
    output: Location,
    tokenizer: Tokenizer,
    settings: TokenizeSettings,
    task: Option<shardsmith_store::tasks::TaskId>,
}

fn resolve(args: &TokenizeArgs) -> Result<Resolved> {
    if args.paths.len() < 2 {
        refuse!(
            "usage",
            "give the input (files or directories) and then the output directory"
        );
    }
    let format = match args.format {
        TokenFormatArg::Megatron => TokenFormat::Megatron,
        TokenFormatArg::Nanogpt => TokenFormat::Nanogpt,
        TokenFormatArg::Llmc => TokenFormat::Llmc,
    };
    let eod = !args.no_eod;
    if !eod && args.eod_token.is_some() {
        refuse!(
            "usage",
            "--eod-token names the end-of-document token, but --no-eod adds none"
        );
    }
    let mut settings = TokenizeSettings {
        format,
        field: args.field.clone(),
        shard_tokens: args.shard_tokens.0,
        prefix: args.prefix.clone(),
        eod,
        eod_token: args.eod_token.clone(),
        allow_special: args.allow_special,
        strict: args.strict,
        force: args.force,
        threads: rayon::current_num_threads(),
    };
    settings.check()?;
    let task = crate::task::resolve(
        args.task.task_index.as_deref(),
        args.task.task_count,
        &|name| std::env::var(name).ok(),
    )?;
    if let Some(task) = &task {
        if task.count == 0 || task.index >= task.count {
            refuse!(
                "task",
                "task index {} ({}) must be below the task count {}",
                task.index,
                task.source,
                task.count
            );
        }
        if args.force {
            refuse!(
                "usage",
                "--force cannot be combined with a task index: each task would remove what the others wrote; empty the output first"
            );
        }
    }
    let output = storage::location(args.output())?;
    if let Location::Local(path) = &output {
        std::path::absolute(path)
            .with_context(|| format!("output `{}` is not a valid path", path.display()))?;
    }
    let mut roots = Vec::with_capacity(args.inputs().len());
    for input in args.inputs() {
        if let Location::Remote(remote) = storage::location(input)? {
            let shown = remote.url("");
            let out = output.display();
            if out == shown || out.starts_with(&format!("{shown}/")) {
                refuse!(
                    "output_conflict",
                    "output `{out}` is inside the input `{shown}`; choose an output outside the input"
                );
            }
            let (tree, file) = ObjectTree::for_remote(remote)?;
            roots.push(InputRoot {
                source: Arc::new(tree),
                display: shown,
                file,
            });
            continue;
        }
        crate::output::need_path(input, "input")?;
        let full = input
            .canonicalize()
            .with_context(|| format!("input `{}` cannot be opened", input.display()))?;
        if let Location::Local(output) = &output {
            let output = std::path::absolute(output)?;
            let out = output.canonicalize().unwrap_or_else(|_| output.clone());
            if full.is_dir() && (out.starts_with(&full) || full.starts_with(&out)) {
                refuse!(
                    "output_conflict",
                    "output `{}` and input `{}` overlap; choose an output outside the input",
                    args.output().display(),
                    input.display()
                );
            }
        }
        roots.push(InputRoot::local(input)?);
    }
    let inputs = shardsmith_tokens::input::list(&roots)?;
    let tokenizer = Tokenizer::load(&TokenizerSpec::parse(&args.tokenizer), args.allow_special)?;
    if let Some(size) = args.shard_size {
        let dtype = format.dtype(tokenizer.vocab_size())?;
        let header = if format == TokenFormat::Llmc { 1024 } else { 0 };
        let tokens = size.saturating_sub(header) / dtype.size();
        if tokens == 0 {
            refuse!(
                "setting",
                "--shard-size {size} holds no {} token",
                dtype.name()
            );
        }
        settings.shard_tokens = Some(tokens);
        settings.check()?;
    }
    Ok(Resolved {
        task,
        inputs,
        output,
        tokenizer,
        settings,
    })
}

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

fn pattern(report: &TokenizeReport) -> String {
    let names: Vec<&str> = report
        .manifest
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| p.ends_with(".bin"))
        .collect();
    brace_pattern(&names).unwrap_or_default()
}

fn eod_text(report: &TokenizeReport) -> String {
    let o = &report.manifest.options;
    let placement = match report.manifest.format.as_deref() {
        Some("llmc") => "prepended to",
        _ => "appended to",
    };
    match (o.get("eod_token").and_then(|v| v.as_str()), o.get("eod_id")) {
        (Some(token), Some(id)) => format!("{token} ({id}) {placement} every document"),
        _ => "no end-of-document token".into(),
    }
}

fn summary(
    report: &TokenizeReport,
    resolved: &Resolved,
    output: &Output,
    elapsed: Duration,
) -> String {
    let m = &report.manifest;
    let documents = m.totals.documents.unwrap_or(0);
    let tokens = m.totals.tokens.unwrap_or(0);
    let mut out = String::new();
    if report.already_complete {
        out.push_str(&format!(
            "already complete: {} holds this dataset ({documents} documents, {tokens} tokens in {} files); nothing to do\n",
            output.show(""),
            m.files.len()
        ));
    } else {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let read = report.input_bytes_read;
        out.push_str(&format!(
            "tokenized {documents} documents ({}) into {tokens} tokens with {} in {} ({}/s, {})\n",
            human_bytes(m.input.as_ref().map_or(0, |i| i.bytes)),
            resolved.tokenizer.name(),
            seconds(elapsed),
            human_bytes((read as f64 / secs) as u64),
            token_rate(tokens as f64 / secs),
        ));
    }
    let dtype = m
        .options
        .get("dtype")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let idx = if m.format.as_deref() == Some("megatron") {
        " (+ .idx)"
    } else {
        ""
    };
    out.push_str(&format!(
        "  files     {}{idx}\n",
        output.show(&pattern(report))
    ));
    out.push_str(&format!(
        "  format    {}, {dtype}, {}\n",
        m.format.as_deref().unwrap_or(""),
        eod_text(report)
    ));
    manifest_lines(&mut out, &output.show(MANIFEST_FILE), &m.root_sha256);
    resumed_line(&mut out, report.shards_resumed, "file(s)");
    if let Some(total) = m.skipped_total {
        let heading = format!("{total} malformed record(s)");
        skipped_lines(&mut out, &heading, &m.skipped, total as usize, "");
    }
    out
}

fn json_report<'a>(
    report: &'a TokenizeReport,
    resolved: &'a Resolved,
    output: &Output,
    elapsed: Duration,
) -> report::Tokenize<'a> {
    let m = &report.manifest;
    report::Tokenize {
        already_complete: report.already_complete,
        command: "tokenize",
        documents: m.totals.documents,
        dtype: m.options.get("dtype"),
        eod_id: m.options.get("eod_id"),
        file_pattern: pattern(report),
        files: m.files.len(),
        format: m.format.as_deref(),
        input_bytes: m.input.as_ref().map(|i| i.bytes),
        input_bytes_read: report.input_bytes_read,
        input_files: m.input.as_ref().map(|i| i.files),
        manifest: MANIFEST_FILE,
        output: output.show(""),
        output_bytes: m.totals.bytes,
        root_sha256: &m.root_sha256,
        seconds: elapsed.as_secs_f64(),
        shards_resumed: report.shards_resumed,
        shards_written: report.shards_written,
        skipped: &m.skipped,
        skipped_total: m.skipped_total.unwrap_or(0),
        tokenizer: resolved.tokenizer.name(),
        tokens: m.totals.tokens,
        version: report::VERSION,
        vocab_size: resolved.tokenizer.vocab_size(),
    }
}

/// Tokens per second: in millions, or as a plain count when that would print 0.00.
fn token_rate(per_second: f64) -> String {
    if per_second >= 5e3 {
        format!("{:.2} M tokens/s", per_second / 1e6)
    } else {
        format!("{per_second:.0} tokens/s")
    }
}
