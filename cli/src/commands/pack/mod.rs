//! `shardsmith pack`: resolve the arguments, run the pipeline with a progress bar,
//! report.

mod input;
mod progress;
mod resolve;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_pack::tree::FileTree;
use shardsmith_pack::{PackReport, pack};
use shardsmith_shard::parquet::input::is_parquet_input;
use shardsmith_shard::sample::SampleSource;
use shardsmith_store::{InputSource, LocalTree, Location, ObjectTree};

use super::{Status, brace_pattern};
use crate::args::{InputFormatArg, PackArgs};
use crate::output::{Printer, manifest_lines, resumed_line, seconds, skipped_lines};
use crate::report;
use crate::size::human_bytes;
use crate::storage::{self, Output};
use input::Kind;
use progress::Progress;
use resolve::{Resolved, resolve};

/// True when the run goes through Arrow buffers: Parquet output or Parquet input (an
/// unreadable input counts as not Parquet; `run` reports it).
pub fn uses_arrow(args: &PackArgs) -> bool {
    args.format.name() == "parquet"
        || match args.input_format {
            InputFormatArg::Files => false,
            InputFormatArg::Format(format) => format.name() == "parquet",
            // An object store input is not listed twice to decide an allocator setting.
            InputFormatArg::Auto => {
                storage::is_remote(&args.input) || looks_like_parquet(&args.input)
            }
        }
}

/// True when `--input-format auto` means Parquet rows (the library decides, at the
/// first file that is not Parquet: a tree of raw files costs one directory read).
fn looks_like_parquet(input: &Path) -> bool {
    match LocalTree::for_path(input) {
        Ok((tree, only)) => is_parquet_input(&tree, only.as_ref().map(|(rel, _)| rel.as_str())),
        Err(_) => false,
    }
}

/// The sample source of a Parquet, WebDataset or MDS input (`None` for raw files).
fn open_source(resolved: &Resolved) -> Result<Option<Box<dyn SampleSource>>> {
    if resolved.kind == Kind::Files {
        return Ok(None);
    }
    let (tree, only) = match (&resolved.input, &resolved.exclude, &resolved.files_from) {
        // An output directory inside the input is not read as input.
        (Location::Local(path), Some(exclude), None) if path.is_dir() => {
            let tree: Arc<dyn InputSource> = Arc::new(LocalTree::new(path).excluding(exclude));
            (tree, None)
        }
        (input, _, list) => input::tree(input, list.as_deref())?,
    };
    input::open(
        resolved.kind,
        tree,
        only.as_deref(),
        &resolved.input.display(),
        resolved.choice.key_column(),
        resolved.settings.key_prefix,
        &resolved.scratch,
    )
}

pub fn run(args: &PackArgs, printer: &Printer) -> Result<Status> {
    let mut resolved = resolve(args)?;
    let started = Instant::now();
    let source: Box<dyn InputSource> = match &resolved.input {
        Location::Local(path) => {
            let mut source = LocalTree::new(path);
            if let Some(files) = resolved.files_from.take() {
                source = source.with_files(files);
            }
            if let Some(exclude) = &resolved.exclude {
                source = source.excluding(exclude);
            }
            Box::new(source)
        }
        Location::Remote(remote) => {
            let mut source = ObjectTree::new(remote.clone());
            if let Some(files) = resolved.files_from.take() {
                source = source.with_files(files);
            }
            Box::new(source)
        }
    };
    let tree = FileTree::new(source.as_ref());
    if let Some(task) = &resolved.settings.task {
        printer.note(&format!(
            "task {} of {} (from {})",
            task.index, task.count, task.source
        ));
    }
    let output = Output::create(&resolved.output)?;
    let sink = output.sink();
    // Opened once the output exists: compressed shards are decompressed into scratch
    // space, by default in the output directory.
    let opened = open_source(&resolved).map_err(|e| super::after_failure(e, &output))?;
    let samples: &dyn SampleSource = match &opened {
        Some(source) => source.as_ref(),
        None => &tree,
    };
    let progress = Progress::new(printer);
    let result = pack(
        samples,
        sink,
        &resolved.choice,
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
    if !report.manifest.skipped.is_empty() && !printer.verbose() {
        printer.warn(&format!(
            "{} input file(s) left out; they are listed with the reason under \"skipped\" in {} (-v shows them)",
            report.manifest.skipped.len(),
            output.show(MANIFEST_FILE)
        ));
    }
    printer.summary(&summary(&report, &output, elapsed));
    printer.report(&json_report(&report, &output, elapsed));
    Ok(Status::Clean)
}

fn shards(report: &PackReport) -> impl Iterator<Item = &shardsmith_manifest::FileEntry> {
    report.manifest.files.iter().filter(|f| f.format.is_some())
}

fn pattern(report: &PackReport) -> String {
    let names: Vec<&str> = shards(report).map(|f| f.path.as_str()).collect();
    brace_pattern(&names).unwrap_or_default()
}

fn summary(report: &PackReport, output: &Output, elapsed: std::time::Duration) -> String {
    let m = &report.manifest;
    let input = m
        .input
        .clone()
        .unwrap_or_else(|| shardsmith_manifest::InputSummary {
            files: 0,
            bytes: 0,
            listing_sha256: String::new(),
        });
    let mut out = String::new();
    if let Some(task) = &report.task {
        let (mine, all) = task.bytes;
        out.push_str(&format!(
            "task {} of {}: planned shards {}..{} of {} ({} of {}): {} written{} in {}\n",
            task.task.index,
            task.task.count,
            task.plans.start,
            task.plans.end,
            task.total_plans,
            human_bytes(mine),
            human_bytes(all),
            report.shards_written,
            if report.shards_resumed > 0 {
                format!(
                    ", {} kept from an interrupted attempt",
                    report.shards_resumed
                )
            } else {
                String::new()
            },
            seconds(elapsed),
        ));
        out.push_str(&format!(
            "  then, once every task has finished: shardsmith merge {}\n",
            output.show("")
        ));
        return out;
    }
    if report.already_complete {
        out.push_str(&format!(
            "already complete: {} holds this dataset ({} samples in {} shards); nothing to do\n",
            output.show(""),
            m.totals.samples.unwrap_or(0),
            shards(report).count()
        ));
    } else {
        let rate = input.bytes as f64 / elapsed.as_secs_f64().max(1e-9);
        out.push_str(&format!(
            "packed {} samples ({} files, {}) into {} {} shards ({}) in {} ({}/s)\n",
            m.totals.samples.unwrap_or(0),
            input.files,
            human_bytes(input.bytes),
            shards(report).count(),
            m.format.as_deref().unwrap_or(""),
            human_bytes(m.totals.bytes),
            seconds(elapsed),
            human_bytes(rate as u64),
        ));
    }
    out.push_str(&format!("  shards    {}\n", output.show(&pattern(report))));
    manifest_lines(&mut out, &output.show(MANIFEST_FILE), &m.root_sha256);
    resumed_line(&mut out, report.shards_resumed, "shard(s)");
    if !m.skipped.is_empty() {
        let heading = format!("{} input file(s)", m.skipped.len());
        skipped_lines(
            &mut out,
            &heading,
            &m.skipped,
            m.skipped.len(),
            " in the manifest",
        );
    }
    out
}

fn json_report<'a>(
    report: &'a PackReport,
    output: &Output,
    elapsed: std::time::Duration,
) -> report::Pack<'a> {
    let m = &report.manifest;
    report::Pack {
        already_complete: report.already_complete,
        command: "pack",
        format: m.format.as_deref(),
        input_bytes: m.input.as_ref().map(|i| i.bytes),
        input_files: m.input.as_ref().map(|i| i.files),
        manifest: MANIFEST_FILE,
        output: output.show(""),
        output_bytes: m.totals.bytes,
        root_sha256: &m.root_sha256,
        samples: m.totals.samples,
        seconds: elapsed.as_secs_f64(),
        shard_pattern: pattern(report),
        shards: shards(report).count(),
        shards_resumed: report.shards_resumed,
        shards_written: report.shards_written,
        skipped: &m.skipped,
        task: report.task.as_ref().map(|t| report::PackTask {
            count: t.task.count,
            index: t.task.index,
            plans: [t.plans.start, t.plans.end],
            source: &t.task.source,
            total_plans: t.total_plans,
        }),
        version: report::VERSION,
        warnings: &report.warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::looks_like_parquet;

    #[test]
    fn parquet_input_is_told_by_names_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(
            !looks_like_parquet(root),
            "an empty directory is not Parquet"
        );
        std::fs::create_dir(root.join("part")).unwrap();
        std::fs::write(root.join("part/a.parquet"), b"").unwrap();
        std::fs::write(root.join("manifest.json"), b"{}").unwrap();
        std::fs::write(root.join(".hidden"), b"").unwrap();
        assert!(looks_like_parquet(root));
        assert!(looks_like_parquet(&root.join("part/a.parquet")));
        std::fs::write(root.join("part/b.json"), b"{}").unwrap();
        assert!(
            !looks_like_parquet(root),
            "one raw file makes a tree of raw files"
        );
        std::fs::remove_file(root.join("part/b.json")).unwrap();
        std::os::unix::fs::symlink(root.join("part"), root.join("link")).unwrap();
        assert!(
            looks_like_parquet(root),
            "a symlinked directory is not followed"
        );
    }
}
