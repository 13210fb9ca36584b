//! `shardsmith pack`: resolve the arguments, run the pipeline with a progress bar,
//! report.

mod input;
mod progress;
mod resolve;
mod text;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_pack::pack;
use shardsmith_pack::tree::FileTree;
use shardsmith_shard::definition::Buffers;
use shardsmith_shard::parquet::input::is_parquet_input;
use shardsmith_shard::sample::SampleSource;
use shardsmith_store::{InputSource, LocalTree, Location, ObjectTree};

use super::Status;
use crate::args::{InputFormatArg, PackArgs};
use crate::output::Printer;
use crate::storage::{self, Output};
use input::Kind;
use progress::Progress;
use resolve::{Resolved, resolve};
use text::{json_report, summary};

/// True when the run allocates and frees large buffers over and over: an output or
/// input format that builds batches or shards in memory (Parquet, Hugging Face, LitData;
/// an unreadable input counts as none; `run` reports it).
pub fn uses_arrow(args: &PackArgs) -> bool {
    args.format.def().buffers() != Buffers::Streamed
        || match args.input_format {
            InputFormatArg::Files => false,
            InputFormatArg::Format(format) => format.def().buffers() != Buffers::Streamed,
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
