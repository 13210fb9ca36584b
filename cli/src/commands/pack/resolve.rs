//! `pack` arguments resolved into checked settings before any file is touched: the
//! format and its options, the input (its kind, a brace pattern, a file list), the
//! output, the image options and the scratch space.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use shardsmith_image::{ImageOptions, OutputFormat, ResizeMode, Size, StoreAs};
use shardsmith_pack::PackSettings;
use shardsmith_pack::images::ImageSettings;
use shardsmith_shard::columns::Encoding;
use shardsmith_shard::content::Validation;
use shardsmith_shard::keys::KeyPrefix;
use shardsmith_shard::{FormatChoice, FormatOptions};
use shardsmith_store::Location;

use super::input::{self, Kind};
use crate::args::{
    ImageArgs, ImageAsArg, ImageFormatArg, KeyPrefixArg, PackArgs, ResizeModeArg, ValidateArg,
};
use crate::output::refuse;
use crate::size::{parse_count, parse_size};
use crate::storage;

/// `pack` arguments resolved and checked before any file is touched.
pub struct Resolved {
    /// A local input is canonical; a remote one as given.
    pub input: Location,
    pub kind: Kind,
    pub output: Location,
    pub choice: FormatChoice,
    /// The `--files-from` list, as read.
    pub files_from: Option<String>,
    pub exclude: Option<PathBuf>,
    /// Where transformed images and decompressed shards wait.
    pub scratch: PathBuf,
    pub settings: PackSettings,
}

/// Resolves and checks every argument: the settings first (no I/O), then the input
/// (its kind read from what it holds), then the output against the input.
pub fn resolve(args: &PackArgs) -> Result<Resolved> {
    let choice = FormatChoice::new(args.format, &format_options(args)?)?;
    let settings = pack_settings(args)?;
    let expanded = input::expand(&args.input)?;
    if expanded.is_some() && args.files_from.is_some() {
        refuse!(
            Usage,
            "INPUT is a brace pattern of shards; --files-from would name the shards a second way"
        );
    }
    let files_from = match &expanded {
        Some(expanded) => Some(expanded.list.clone()),
        None => args.files_from.as_deref().map(read_list).transpose()?,
    };
    let resolved = Resolved {
        input: storage::location(&args.input)?,
        kind: Kind::Files,
        // Named once the input is checked (`remote_input`, `local_input`).
        output: Location::Local(args.output.clone()),
        choice,
        files_from,
        exclude: None,
        scratch: scratch_dir(args, &args.output),
        settings,
    };
    match &resolved.input {
        Location::Remote(_) => remote_input(args, resolved),
        Location::Local(_) => local_input(args, resolved, expanded),
    }
}

/// The run's settings, from the flags alone.
fn pack_settings(args: &PackArgs) -> Result<PackSettings> {
    let validation = match args.validate {
        Some(ValidateArg::None) => Validation::None,
        Some(ValidateArg::Cheap) | None => Validation::Cheap,
        Some(ValidateArg::Full) => Validation::Full,
    };
    let settings = PackSettings {
        max_samples: args.max_samples,
        shuffle_seed: args.shuffle.then(|| args.seed.unwrap_or(0)),
        validation,
        strict: args.strict,
        dedup: args.dedup,
        force: args.force,
        task: crate::task::resolve(
            args.task.task_index.as_deref(),
            args.task.task_count,
            &|name| std::env::var(name).ok(),
        )?,
        fields: args.fields.as_deref().map(field_list),
        images: images(&args.images, &scratch_dir(args, &args.output))?,
        key_prefix: match args.key_prefix {
            KeyPrefixArg::None => KeyPrefix::None,
            KeyPrefixArg::Stem => KeyPrefix::Stem,
            KeyPrefixArg::Path => KeyPrefix::Path,
        },
    };
    settings.check()?;
    Ok(settings)
}

/// What the input holds (raw files, or shards of a format), and the checks and
/// settings that depend on it.
fn input_kind(args: &PackArgs, resolved: &mut Resolved, brace: bool) -> Result<()> {
    let (tree, only) = input::tree(&resolved.input, resolved.files_from.as_deref())?;
    let kind = input::kind(args.input_format, tree.as_ref(), only.as_deref(), brace)?;
    let settings = &mut resolved.settings;
    settings.validation = validation_for(args.validate, kind, settings.validation);
    refuse_list(kind, args.files_from.is_some())?;
    refuse_prefix(kind, settings.key_prefix)?;
    resolved.kind = kind;
    Ok(())
}

/// An input in an object store: its kind, and an output outside it.
fn remote_input(args: &PackArgs, mut resolved: Resolved) -> Result<Resolved> {
    input_kind(args, &mut resolved, false)?;
    resolved.output = storage::location(&args.output)?;
    let input_url = resolved.input.display();
    let output_url = resolved.output.display();
    if output_url == input_url || output_url.starts_with(&format!("{input_url}/")) {
        refuse!(
            OutputConflict,
            "output `{output_url}` is inside the input `{input_url}`: shards would be listed among the files they are made of; choose an output prefix outside the input"
        );
    }
    Ok(resolved)
}

/// A local input, made canonical (a brace pattern's root, a dataset's directory when
/// its index was named): its kind, and an output that neither is nor holds it.
fn local_input(
    args: &PackArgs,
    mut resolved: Resolved,
    expanded: Option<input::Expanded>,
) -> Result<Resolved> {
    let mut input = match &expanded {
        Some(expanded) => expanded.root.clone(),
        None => {
            crate::output::need_path(&args.input, "input")?;
            args.input
                .canonicalize()
                .with_context(|| format!("input `{}` cannot be opened", args.input.display()))?
        }
    };
    resolved.input = Location::Local(input.clone());
    input_kind(args, &mut resolved, expanded.is_some())?;
    match resolved.kind {
        Kind::Files if !input.is_dir() => refuse!(
            NotADirectory,
            "input `{}` is not a directory (raw files are packed from a directory tree)",
            args.input.display()
        ),
        // The dataset is its directory; naming its index names it too.
        Kind::Shards(format) if format.def().has_root_index() && input.is_file() => {
            input = input.parent().map(Path::to_path_buf).unwrap_or(input);
        }
        _ => {}
    }
    let output_abs = absolute(&args.output)?;
    if output_abs == input {
        refuse!(
            OutputConflict,
            "output `{}` is the input directory; choose another output",
            args.output.display()
        );
    }
    if input.starts_with(&output_abs) {
        refuse!(
            OutputConflict,
            "output `{}` contains the input `{}`: shards would be written among the files they are made of; choose an output directory that is not a parent of the input",
            args.output.display(),
            args.input.display()
        );
    }
    resolved.exclude = output_abs.strip_prefix(&input).ok().map(Path::to_path_buf);
    if let remote @ Location::Remote(_) = storage::location(&args.output)? {
        resolved.output = remote;
    }
    resolved.input = Location::Local(input);
    Ok(resolved)
}

/// The content checks of a run: as asked, else `cheap` for raw files and none for a
/// conversion, whose readers read a field whatever bytes it holds (a `jpg` that is
/// not a JPEG is still read), so that a conversion keeps every sample they read.
fn validation_for(asked: Option<ValidateArg>, kind: Kind, resolved: Validation) -> Validation {
    match (asked, kind) {
        (None, Kind::Shards(_)) => Validation::None,
        _ => resolved,
    }
}

/// `--files-from` names raw files or shards that stand alone (tar shards); an input
/// read whole (Parquet, MDS) takes no list.
fn refuse_list(kind: Kind, files_from: bool) -> Result<()> {
    if let Kind::Shards(format) = kind
        && files_from
        && !format.def().selects_files()
    {
        refuse!(
            Usage,
            "--files-from selects raw files or WebDataset shards; it does not apply to {} input",
            format.def().title()
        );
    }
    Ok(())
}

/// `--key-prefix` tells apart keys of different input files; raw files' keys are their
/// paths, unique already.
fn refuse_prefix(kind: Kind, prefix: KeyPrefix) -> Result<()> {
    if kind == Kind::Files && prefix != KeyPrefix::None {
        refuse!(
            Usage,
            "--key-prefix applies to Parquet, WebDataset and MDS inputs, whose keys come from inside their files; the keys of raw files are their paths, unique already"
        );
    }
    Ok(())
}

/// Where transformed images and decompressed copies of compressed shards wait until
/// their shard is written: `--scratch-dir`, else the output directory (the system's
/// temporary directory for an object store output).
fn scratch_dir(args: &PackArgs, output: &Path) -> PathBuf {
    match &args.scratch_dir {
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
        index: args.index.clone(),
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
            refuse!(Usage, "--column `{field}` is given twice");
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
