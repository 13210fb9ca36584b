//! `shardsmith pack`: resolve the arguments, run the pipeline with a progress bar,
//! report.

mod input;
mod progress;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_pack::tree::FileTree;
use shardsmith_pack::{PackReport, PackSettings, pack};
use shardsmith_shard::columns::Encoding;
use shardsmith_shard::content::Validation;
use shardsmith_shard::parquet::input::is_parquet_input;
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::{FormatChoice, FormatOptions};
use shardsmith_store::{InputSource, LocalTree, Location, ObjectTree};

use super::{Status, brace_pattern};
use crate::args::{
    ImageArgs, ImageAsArg, ImageFormatArg, InputFormatArg, PackArgs, ResizeModeArg, ValidateArg,
};
use crate::output::{Printer, manifest_lines, resumed_line, seconds, skipped_lines};
use crate::report;
use crate::size::{human_bytes, parse_count, parse_size};
use crate::storage::{self, Output};
use input::Kind;
use progress::Progress;
use shardsmith_image::{ImageOptions, OutputFormat, ResizeMode, Size, StoreAs};
use shardsmith_pack::images::ImageSettings;

/// `pack` arguments resolved and checked before any file is touched.
struct Resolved {
    /// A local input is canonical; a remote one as given.
    input: Location,
    kind: Kind,
    output: Location,
    choice: FormatChoice,
    /// The `--files-from` list, as read.
    files_from: Option<String>,
    exclude: Option<PathBuf>,
    /// Where transformed images and decompressed shards wait.
    scratch: PathBuf,
    settings: PackSettings,
}

fn resolve(args: &PackArgs) -> Result<Resolved> {
    let choice = FormatChoice::new(args.format, &format_options(args)?)?;
    let validation = match args.validate {
        ValidateArg::None => Validation::None,
        ValidateArg::Cheap => Validation::Cheap,
        ValidateArg::Full => Validation::Full,
    };
    let settings = PackSettings {
        max_samples: args.max_samples,
        shuffle_seed: args.shuffle.then(|| args.seed.unwrap_or(0)),
        validation,
        strict: args.strict,
        force: args.force,
        task: super::task::resolve(
            args.task.task_index.as_deref(),
            args.task.task_count,
            &|name| std::env::var(name).ok(),
        )?,
        fields: args.fields.as_deref().map(field_list),
        images: images(&args.images, &scratch_dir(args, &args.output))?,
    };
    settings.check()?;
    let output_given = args.output.clone();
    let expanded = input::expand(&args.input)?;
    if expanded.is_some() && args.files_from.is_some() {
        bail!(
            "INPUT is a brace pattern of shards; --files-from would name the shards a second way"
        );
    }
    let files_from = match &expanded {
        Some(expanded) => Some(expanded.list.clone()),
        None => args.files_from.as_deref().map(read_list).transpose()?,
    };
    if let Location::Remote(remote) = storage::location(&args.input)? {
        let location = Location::Remote(remote.clone());
        let (tree, only) = input::tree(&location, files_from.as_deref())?;
        let kind = input::kind(args.input_format, tree.as_ref(), only.as_deref(), false)?;
        refuse_list(kind, args.files_from.is_some())?;
        let output = storage::location(&output_given)?;
        let input_url = remote.url("");
        let output_url = output.display();
        if output_url == input_url || output_url.starts_with(&format!("{input_url}/")) {
            bail!(
                "output `{output_url}` is inside the input `{input_url}`: shards would be listed among the files they are made of; choose an output prefix outside the input"
            );
        }
        return Ok(Resolved {
            input: location,
            kind,
            output,
            choice,
            files_from,
            exclude: None,
            scratch: scratch_dir(args, &output_given),
            settings,
        });
    }
    let mut input = match &expanded {
        Some(expanded) => expanded.root.clone(),
        None => {
            crate::output::need_path(&args.input, "input")?;
            args.input
                .canonicalize()
                .with_context(|| format!("input `{}` cannot be opened", args.input.display()))?
        }
    };
    let location = Location::Local(input.clone());
    let (tree, only) = input::tree(&location, files_from.as_deref())?;
    let kind = input::kind(
        args.input_format,
        tree.as_ref(),
        only.as_deref(),
        expanded.is_some(),
    )?;
    refuse_list(kind, args.files_from.is_some())?;
    match kind {
        Kind::Files if !input.is_dir() => bail!(
            "input `{}` is not a directory (raw files are packed from a directory tree)",
            args.input.display()
        ),
        // The dataset is its directory; naming its index.json names it too.
        Kind::Mds if input.is_file() => {
            input = input.parent().map(Path::to_path_buf).unwrap_or(input);
        }
        _ => {}
    }
    let output_abs = absolute(&args.output)?;
    if output_abs == input {
        bail!(
            "output `{}` is the input directory; choose another output",
            args.output.display()
        );
    }
    if input.starts_with(&output_abs) {
        bail!(
            "output `{}` contains the input `{}`: shards would be written among the files they are made of; choose an output directory that is not a parent of the input",
            args.output.display(),
            args.input.display()
        );
    }
    let exclude = output_abs.strip_prefix(&input).ok().map(Path::to_path_buf);
    let output = match storage::location(&output_given)? {
        Location::Local(_) => Location::Local(output_given.clone()),
        remote => remote,
    };
    Ok(Resolved {
        input: Location::Local(input),
        kind,
        output,
        choice,
        files_from,
        exclude,
        scratch: scratch_dir(args, &output_given),
        settings,
    })
}

/// `--files-from` names raw files or tar shards; Parquet and MDS inputs are read whole.
fn refuse_list(kind: Kind, files_from: bool) -> Result<()> {
    if files_from && matches!(kind, Kind::Parquet | Kind::Mds) {
        bail!(
            "--files-from selects raw files or WebDataset shards; it does not apply to {} input",
            if kind == Kind::Mds { "MDS" } else { "Parquet" }
        );
    }
    Ok(())
}

/// Where transformed images and decompressed copies of compressed shards wait until
/// their shard is written: `--scratch-dir`, else the output directory (the system's
/// temporary directory for an object store output).
fn scratch_dir(args: &PackArgs, output: &Path) -> PathBuf {
    match &args.images.scratch_dir {
        Some(dir) => dir.clone(),
        None if storage::is_remote(output) => std::env::temp_dir(),
        None => output.to_path_buf(),
    }
}

/// A comma-separated list of field names, lowercased.
fn field_list(list: &str) -> std::collections::BTreeSet<String> {
    list.split(',')
        .map(|f| f.trim().to_ascii_lowercase())
        .filter(|f| !f.is_empty())
        .collect()
}

/// The image settings, when any image option is given.
fn images(args: &ImageArgs, scratch: &Path) -> Result<Option<ImageSettings>> {
    if !args.any() {
        return Ok(None);
    }
    let defaults = ImageOptions::default();
    let options = ImageOptions {
        size: match &args.image_size {
            Some(text) => Size::parse(text).map_err(|e| anyhow::anyhow!("--image-size: {e}"))?,
            None => defaults.size,
        },
        mode: match args.resize_mode {
            None => defaults.mode,
            Some(ResizeModeArg::No) => ResizeMode::No,
            Some(ResizeModeArg::KeepRatio) => ResizeMode::KeepRatio,
            Some(ResizeModeArg::KeepRatioLargest) => ResizeMode::KeepRatioLargest,
            Some(ResizeModeArg::CenterCrop) => ResizeMode::CenterCrop,
            Some(ResizeModeArg::Border) => ResizeMode::Border,
        },
        only_if_bigger: args.resize_only_if_bigger,
        format: match args.image_format {
            None | Some(ImageFormatArg::Jpg) => OutputFormat::Jpeg,
            Some(ImageFormatArg::Png) => OutputFormat::Png,
            Some(ImageFormatArg::Webp) => OutputFormat::Webp,
        },
        quality: args.image_quality.unwrap_or(match args.image_format {
            // img2dataset's encode_quality is the zlib level for png.
            Some(ImageFormatArg::Png) => 9,
            _ => defaults.quality,
        }),
        min_size: args.min_image_size.unwrap_or(0),
        max_area: args.max_image_area.unwrap_or(defaults.max_area),
        max_aspect_ratio: args.max_aspect_ratio.unwrap_or(f64::INFINITY),
        skip_reencode: args.skip_reencode,
        full_decode: args.full_decode,
        store: match args.image_as {
            Some(ImageAsArg::Tensor) => StoreAs::Tensor,
            _ => StoreAs::Encoded,
        },
    };
    Ok(Some(ImageSettings {
        options,
        fields: args.image_fields.as_deref().map(field_list),
        scratch: scratch.to_path_buf(),
    }))
}

/// True when the run goes through Arrow buffers: Parquet output or Parquet input (an
/// unreadable input counts as not Parquet; `run` reports it).
pub fn uses_arrow(args: &PackArgs) -> bool {
    args.format.name() == "parquet"
        || match args.input_format {
            InputFormatArg::Files | InputFormatArg::Webdataset | InputFormatArg::Mds => false,
            InputFormatArg::Parquet => true,
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

/// `path` made absolute with symlinks resolved as far as it exists.
fn absolute(path: &Path) -> Result<PathBuf> {
    let path = std::path::absolute(path)
        .with_context(|| format!("output `{}` is not a valid path", path.display()))?;
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        let Some(parent) = existing.parent() else {
            break;
        };
        rest.push(existing.file_name().map(PathBuf::from).unwrap_or_default());
        existing = parent;
    }
    let mut resolved = existing
        .canonicalize()
        .unwrap_or_else(|_| existing.to_path_buf());
    for part in rest.iter().rev() {
        resolved.push(part);
    }
    Ok(resolved)
}

/// The format options as given, for the chosen format to check (options of another
/// format are refused rather than ignored).
fn format_options(args: &PackArgs) -> Result<FormatOptions> {
    let mut options = FormatOptions {
        shard_size: args.shard_size,
        prefix: args.prefix.clone(),
        compression: args.compression.clone(),
        key_column: args.key_column.clone(),
        hashes: args.hashes.clone(),
        ..FormatOptions::default()
    };
    for spec in &args.column {
        let (field, encoding) = spec
            .split_once(':')
            .with_context(|| format!("--column `{spec}`: expected FIELD:ENCODING, e.g. cls:int"))?;
        let encoding =
            Encoding::parse(encoding).map_err(|e| anyhow::anyhow!("--column `{spec}`: {e}"))?;
        if options
            .columns
            .insert(field.to_ascii_lowercase(), encoding)
            .is_some()
        {
            bail!("--column `{field}` is given twice");
        }
    }
    if let Some(text) = &args.row_group_size {
        if text.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
            options.row_group_rows = Some(usize::try_from(
                parse_count(text).map_err(|e| anyhow::anyhow!("--row-group-size: {e}"))?,
            )?);
        } else {
            options.row_group_bytes = Some(usize::try_from(
                parse_size(text).map_err(|e| anyhow::anyhow!("--row-group-size: {e}"))?,
            )?);
        }
    }
    Ok(options)
}

/// The lines of `--files-from LIST`: a local file, `-` for stdin, or an object URL (a
/// list written once for all the tasks of a split run).
fn read_list(list: &Path) -> Result<String> {
    let what = || {
        format!(
            "reading the file list `{}` (one UTF-8 path per line, or PATH<TAB>SIZE)",
            list.display()
        )
    };
    let bytes = if list == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .with_context(what)?;
        bytes
    } else {
        storage::read_small(list).with_context(what)?
    };
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: byte {} is not UTF-8",
            what(),
            e.utf8_error().valid_up_to()
        )
    })
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
        task: report.task.as_ref().map(|t| {
            serde_json::json!({
                "count": t.task.count,
                "index": t.task.index,
                "plans": [t.plans.start, t.plans.end],
                "source": t.task.source,
                "total_plans": t.total_plans,
            })
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
