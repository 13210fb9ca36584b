//! What `pack` reads: the kind of input (raw files, or a dataset of one of the registry's
//! formats) from `--input-format` or from the files themselves, brace patterns of shard
//! names, and the sample source over it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use shardsmith_shard::keys::KeyPrefix;
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::webdataset::input::expand_braces;
use shardsmith_shard::{FormatKind, InputSpec};
use shardsmith_store::{InputSource, LocalTree, Location, ObjectTree};

use crate::args::InputFormatArg;
use crate::output::refuse;
use shardsmith_manifest::ErrorKind;

/// What INPUT holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tree of raw files, grouped into samples by name.
    Files,
    /// A dataset of one of the registry's formats: its samples are read from its shards.
    Shards(FormatKind),
}

impl Kind {
    /// The `--input-format` value that names it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Files => "files",
            Kind::Shards(format) => format.name(),
        }
    }
}

/// A brace pattern of local shard names, expanded: the directory they share and their
/// names below it, one per line (a `--files-from` list).
pub struct Expanded {
    pub root: PathBuf,
    pub list: String,
}

/// Expands INPUT when it is a brace pattern (`shards/shard-{000000..000146}.tar`) rather
/// than an existing path. Every name it expands to must exist: a pattern that names a
/// missing shard would otherwise convert a dataset with a hole in it.
pub fn expand(input: &Path) -> Result<Option<Expanded>> {
    let Some(text) = input.to_str() else {
        return Ok(None);
    };
    if !text.contains('{') || input.exists() {
        return Ok(None);
    }
    if Location::is_remote(text) || text.contains("://") {
        refuse!(
            Usage,
            "input `{text}`: brace patterns are expanded for local paths only; for an object store give the prefix that holds the shards (every .tar below it is read)"
        );
    }
    let names = expand_braces(text).map_err(|e| anyhow::anyhow!("input `{text}`: {e}"))?;
    let paths: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
    let missing: Vec<&PathBuf> = paths.iter().filter(|p| !p.is_file()).collect();
    if missing.len() == paths.len() {
        return Err(crate::output::fail(
            ErrorKind::NotFound,
            text,
            format!(
                "brace pattern `{text}` matches no file: none of its {} names exists (the first is `{}`)",
                paths.len(),
                paths[0].display()
            ),
        ));
    }
    if let Some(first) = missing.first() {
        return Err(crate::output::fail(
            ErrorKind::NotFound,
            first.display(),
            format!(
                "brace pattern `{text}` names {} missing file(s) of {}, the first `{}`: a conversion would leave those shards out",
                missing.len(),
                paths.len(),
                first.display()
            ),
        ));
    }
    let common = common_root(text, &paths)?;
    let root = common
        .canonicalize()
        .with_context(|| format!("input `{}` cannot be opened", common.display()))?;
    let mut list = String::new();
    for path in &paths {
        let full = path
            .canonicalize()
            .with_context(|| format!("input `{}` cannot be opened", path.display()))?;
        let rel = full
            .strip_prefix(&root)
            .ok()
            .and_then(Path::to_str)
            .with_context(|| {
                format!(
                    "`{}` is not a UTF-8 path below `{}`",
                    path.display(),
                    root.display()
                )
            })?;
        list.push_str(rel);
        list.push('\n');
    }
    Ok(Some(Expanded { root, list }))
}

/// The deepest directory that holds every one of `paths` (named by `pattern`).
fn common_root(pattern: &str, paths: &[PathBuf]) -> Result<PathBuf> {
    let text = pattern;
    let mut common: PathBuf = match paths[0].parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    for path in paths {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        while !absolute(path).starts_with(absolute(&common)) {
            common = match common.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if common == Path::new(".") && !absolute(path).starts_with(absolute(&common)) {
                refuse!(
                    Usage,
                    "brace pattern `{text}` names files under different roots"
                );
            }
        }
    }
    Ok(common)
}

/// The input's files as given: the tree at `input` (one file of it when `input` names a
/// file), or only the files of `list` below it.
pub fn tree(
    input: &Location,
    list: Option<&str>,
) -> Result<(Arc<dyn InputSource>, Option<String>)> {
    Ok(match (input, list) {
        (Location::Local(path), Some(list)) => (
            Arc::new(LocalTree::new(path).with_files(list.to_string())),
            None,
        ),
        (Location::Remote(remote), Some(list)) => (
            Arc::new(ObjectTree::new(remote.clone()).with_files(list.to_string())),
            None,
        ),
        (Location::Local(path), None) => {
            let (tree, only) = LocalTree::for_path(path)?;
            (Arc::new(tree), only.map(|(rel, _)| rel))
        }
        (Location::Remote(remote), None) => {
            let (tree, only) = ObjectTree::for_remote(remote.clone())?;
            (Arc::new(tree), only.map(|(rel, _)| rel))
        }
    })
}

/// The kind of input: as `--input-format` says, else told from the files by the
/// registry's one probe order (an MDS `index.json` at the root; only Parquet files; only
/// tar shards), else raw files. A brace pattern names shards that a list can select.
pub fn kind(
    arg: InputFormatArg,
    tree: &dyn InputSource,
    only: Option<&str>,
    brace: bool,
) -> Result<Kind> {
    let listed = || FormatKind::all().find(|format| format.def().selects_files());
    let kind = match arg {
        InputFormatArg::Files => Kind::Files,
        InputFormatArg::Format(format) => Kind::Shards(format),
        InputFormatArg::Auto if brace => Kind::Shards(listed().expect("a format of shard files")),
        InputFormatArg::Auto => {
            FormatKind::detect_input(tree, only).map_or(Kind::Files, Kind::Shards)
        }
    };
    if brace && !matches!(kind, Kind::Shards(format) if format.def().selects_files()) {
        refuse!(
            Usage,
            "a brace pattern names WebDataset shards; --input-format {} does not apply to it",
            kind.name()
        );
    }
    Ok(kind)
}

/// The sample source over an input of the registry's formats (`None` for raw files,
/// which `FileTree` groups), its keys prefixed as `key_prefix` says. `scratch` holds
/// decompressed copies of compressed shards.
pub fn open(
    kind: Kind,
    tree: Arc<dyn InputSource>,
    only: Option<&str>,
    display: &str,
    key_column: &str,
    key_prefix: KeyPrefix,
    scratch: &Path,
) -> Result<Option<Box<dyn SampleSource>>> {
    let Kind::Shards(format) = kind else {
        return Ok(None);
    };
    let spec = InputSpec {
        shown: display,
        only,
        shard: None,
        key_column,
        key_prefix,
        scratch: Some(scratch.to_path_buf()),
    };
    Ok(Some(format.def().open_input(tree, &spec)?))
}
