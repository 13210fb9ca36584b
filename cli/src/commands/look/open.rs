//! Telling what a DATASET is (shards of WebDataset, MDS or Parquet, token files, a
//! checkpoint) and opening it, through an input source that counts the bytes read.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use shardsmith_checkpoint::is_checkpoint_name;
use shardsmith_checkpoint::listing::{TensorEntry, list_tensors};
use shardsmith_manifest::{MANIFEST_FILE, Manifest};
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::{FormatKind, InputSpec};
use shardsmith_store::{InputSource, LocalTree, Location, ObjectTree, ReadError};
use shardsmith_tokens::listing::{TokenFileSummary, summarize};

pub use super::counting::Counting;
use super::settings::Settings;
use crate::output::CliError;
use shardsmith_manifest::ErrorKind;

/// What DATASET turned out to be.
pub enum Dataset {
    Shards(Box<Shards>),
    Tokens(Vec<TokenFileSummary>),
    /// Each checkpoint file with its tensors.
    Checkpoint(Vec<(String, Vec<TensorEntry>)>),
}

/// A shard dataset, not yet opened: `open` reads it (all of it, or one shard).
pub struct Shards {
    pub kind: FormatKind,
    /// DATASET as given, for messages.
    pub shown: String,
    /// The one file DATASET named, when it named a file.
    pub only: Option<String>,
    /// The manifest, when DATASET is a directory with one.
    pub manifest: Option<Manifest>,
    /// Every read goes through it.
    pub counter: Arc<Counting>,
    key_column: String,
}

impl Shards {
    /// The dataset as a sample source; with `shard`, that shard alone.
    pub fn open(&self, shard: Option<&str>) -> Result<Box<dyn SampleSource>> {
        let spec = InputSpec {
            shown: &self.shown,
            only: self.only.as_deref(),
            shard,
            key_column: &self.key_column,
            key_prefix: Default::default(),
            scratch: None,
        };
        Ok(self.kind.def().open_input(self.counter.clone(), &spec)?)
    }

    /// Size of every file of the dataset, by path (a listing: no bytes are read).
    pub fn sizes(&self) -> Result<BTreeMap<String, u64>> {
        Ok(self
            .counter
            .list()?
            .files
            .into_iter()
            .map(|f| (f.rel, f.size))
            .collect())
    }
}

/// `path` names nothing `ls`, `cat` and `stats` can read.
fn unknown(shown: &str) -> anyhow::Error {
    let name = shown.rsplit('/').next().unwrap_or(shown);
    if name.ends_with(".mds") || name.contains(".mds.") {
        return CliError {
            kind: ErrorKind::Unsupported,
            path: Some(shown.to_string()),
            message: format!(
                "`{shown}` is one shard of an MDS dataset, which is read through its index.json: name the directory that holds index.json"
            ),
        }
        .into();
    }
    CliError {
        kind: ErrorKind::Unsupported,
        path: Some(shown.to_string()),
        message: format!(
            "`{shown}` is not a dataset shardsmith can read: no WebDataset tar, MDS index.json, Parquet file, token file or checkpoint"
        ),
    }
    .into()
}

/// Where DATASET's files are read from: the tree, the one file it names (if it names
/// a file), the local directory that holds them, its manifest, and DATASET as shown.
struct Located {
    tree: Arc<dyn InputSource>,
    only: Option<String>,
    dir: Option<PathBuf>,
    manifest: Option<Manifest>,
    shown: String,
}

/// Tells what DATASET is and gets it ready to be read.
pub fn open(settings: &Settings) -> Result<Dataset> {
    let Located {
        tree,
        only,
        dir,
        manifest,
        shown,
    } = locate(&settings.location)?;
    let recorded = manifest
        .as_ref()
        .and_then(|m| m.format.as_deref())
        .and_then(FormatKind::from_name);
    let kind = recorded.or_else(|| FormatKind::detect_input(&*tree, only.as_deref()));
    if let Some(kind) = kind {
        return Ok(Dataset::Shards(Box::new(Shards {
            kind,
            shown,
            only,
            manifest,
            counter: Arc::new(Counting::new(tree)),
            key_column: settings.data.key_column.clone(),
        })));
    }
    let Some(dir) = dir else {
        return Err(CliError {
            kind: ErrorKind::Unsupported,
            path: Some(shown.clone()),
            message: format!(
                "`{shown}` holds no WebDataset, MDS or Parquet shards; token files and checkpoints are listed on local disk only"
            ),
        }
        .into());
    };
    let files: Vec<String> = match &only {
        Some(rel) => vec![rel.clone()],
        None => tree.list()?.files.into_iter().map(|f| f.rel).collect(),
    };
    let files: Vec<String> = files
        .into_iter()
        .filter(|rel| rel != MANIFEST_FILE && rel != shardsmith_manifest::SUMS_FILE)
        .collect();
    let tokens = token_files(&dir, &files, manifest.as_ref())?;
    if !tokens.is_empty() {
        return Ok(Dataset::Tokens(tokens));
    }
    let tensors = checkpoint_files(&dir, &files)?;
    if tensors.is_empty() {
        return Err(unknown(&shown));
    }
    Ok(Dataset::Checkpoint(tensors))
}

/// Opens the tree DATASET names and reads its manifest, if it has one.
fn locate(location: &Location) -> Result<Located> {
    Ok(match location {
        Location::Local(path) => {
            crate::output::need_path(path, "dataset")?;
            let (tree, only) = LocalTree::for_path(path)?;
            let only = only.map(|(rel, _)| rel);
            let dir = if only.is_some() {
                match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                }
            } else {
                path.clone()
            };
            let manifest = match &only {
                None if dir.join(MANIFEST_FILE).is_file() => Some(
                    Manifest::load(&dir.join(MANIFEST_FILE))
                        .with_context(|| format!("reading the manifest of `{}`", path.display()))?
                        .0,
                ),
                _ => None,
            };
            Located {
                tree: Arc::new(tree),
                only,
                dir: Some(dir),
                manifest,
                shown: path.display().to_string(),
            }
        }
        Location::Remote(remote) => {
            let (tree, only) = ObjectTree::for_remote(remote.clone())?;
            let only = only.map(|(rel, _)| rel);
            let manifest = match &only {
                None => remote_manifest(&tree, &location.display())?,
                Some(_) => None,
            };
            Located {
                tree: Arc::new(tree),
                only,
                dir: None,
                manifest,
                shown: location.display(),
            }
        }
    })
}

/// The token files among `files` of `dir`, summarised.
fn token_files(
    dir: &Path,
    files: &[String],
    manifest: Option<&Manifest>,
) -> Result<Vec<TokenFileSummary>> {
    let mut tokens = Vec::new();
    for rel in files {
        let entry = manifest.and_then(|m| m.files.iter().find(|f| &f.path == rel));
        if let Some(summary) = summarize(dir, rel, entry, manifest)
            .map_err(|why| token_error(dir, rel, why.to_string()))?
        {
            tokens.push(summary);
        }
    }
    Ok(tokens)
}

/// The checkpoint files among `files` of `dir`, each with its tensors. A DCP
/// checkpoint is listed from its `.metadata`, whole tensors; its data files hold the
/// chunks.
fn checkpoint_files(dir: &Path, files: &[String]) -> Result<Vec<(String, Vec<TensorEntry>)>> {
    let dcp_dirs: Vec<&str> = files
        .iter()
        .filter_map(|rel| rel.strip_suffix(".metadata"))
        .filter(|d| d.is_empty() || d.ends_with('/'))
        .collect();
    let mut tensors = Vec::new();
    for rel in files {
        let in_dcp = rel.ends_with(".distcp")
            && dcp_dirs
                .iter()
                .any(|d| rel.starts_with(d) && !rel[d.len()..].contains('/'));
        if in_dcp {
            continue;
        }
        match list_tensors(&dir.join(rel)) {
            Ok(Some(list)) => tensors.push((rel.clone(), list)),
            Ok(None) => {}
            Err(why) if is_checkpoint_name(rel) => {
                return Err(token_error(dir, rel, why.to_string()));
            }
            Err(_) => {}
        }
    }
    Ok(tensors)
}

/// The manifest at the root of a remote dataset, if it has one.
fn remote_manifest(tree: &ObjectTree, shown: &str) -> Result<Option<Manifest>> {
    let mut reader = match tree.open(MANIFEST_FILE) {
        Ok(reader) => reader,
        Err(ReadError::Vanished) => return Ok(None),
        Err(e) => {
            return Err(anyhow::Error::new(io::Error::from(e)))
                .with_context(|| format!("reading the manifest of `{shown}`"));
        }
    };
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading the manifest of `{shown}`"))?;
    let at = format!("{}/{MANIFEST_FILE}", shown.trim_end_matches('/'));
    Ok(Some(Manifest::parse(&bytes, Path::new(&at))?.0))
}

fn token_error(dir: &Path, rel: &str, why: String) -> anyhow::Error {
    CliError {
        kind: ErrorKind::BadInput,
        path: Some(dir.join(rel).display().to_string()),
        message: why,
    }
    .into()
}
