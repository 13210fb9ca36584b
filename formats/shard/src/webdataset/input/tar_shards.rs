//! [`TarShards`]: which inputs are tar shards (a directory of them, one file, a brace
//! pattern), found and opened.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use shardsmith_manifest::{MANIFEST_FILE, SUMS_FILE};
use shardsmith_store::InputSource;

use super::shard::{Body, MAX_SHARDS, ShardFile};
use crate::keys::KeyPrefix;
use crate::{Error, Result};

/// Names of tar shards (the content decides the compression).
pub(super) const TAR_NAMES: [&str; 5] = [".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"];

pub(super) fn is_tar_name(rel: &str) -> bool {
    TAR_NAMES.iter().any(|ext| rel.ends_with(ext))
}

/// What a WebDataset tree holds beside its shards and that is not read: hidden files
/// and directories, the manifest and sums shardsmith writes, JSON files (wids shard
/// indices, img2dataset's `_stats.json`) and img2dataset's per-shard `.parquet` metadata.
pub(super) fn is_beside_shards(rel: &str) -> bool {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    rel.split('/').any(|part| part.starts_with('.'))
        || base == MANIFEST_FILE
        || base == SUMS_FILE
        || base.ends_with(".json")
        || base.ends_with(".parquet")
}

/// True when the input holds WebDataset shards: the one file `only` names ends in
/// `.tar`, `.tar.gz`, `.tgz` or `.tar.zst`, or the tree holds such files and nothing
/// else besides hidden files, `manifest.json`, `SHA256SUMS` (a shardsmith WebDataset
/// output is a valid input), JSON files (wids indices, img2dataset stats) and `.parquet`
/// files (img2dataset's metadata beside its tars). Decided at the first other file.
pub fn is_webdataset_input(source: &dyn InputSource, only: Option<&str>) -> bool {
    if let Some(rel) = only {
        return is_tar_name(rel);
    }
    source.every_file(&|rel| {
        if is_beside_shards(rel) {
            None
        } else {
            Some(is_tar_name(rel))
        }
    })
}

/// The tar shards of an input as a sample source.
pub struct TarShards {
    pub(super) source: Arc<dyn InputSource>,
    pub(super) root: String,
    pub(super) files: Vec<ShardFile>,
    pub(super) scratch: Option<PathBuf>,
    /// Where each shard's tar bytes are, once listed.
    pub(super) bodies: Mutex<Vec<Body>>,
}

pub(super) fn bad(path: &str, reason: impl Into<String>) -> Error {
    Error::BadInput {
        path: path.to_string(),
        reason: reason.into(),
    }
}

impl TarShards {
    /// Every tar shard of `source` (or only `only`), in path order. `root` is how the
    /// input was named (messages). `scratch`: directory for decompressed copies of
    /// compressed shards (so random access works for shuffle and parallel writing);
    /// `None`: no copies, a compressed shard is then decompressed from its start for
    /// every read that goes back (fine for `ls` and `cat`).
    pub fn open(
        source: Arc<dyn InputSource>,
        root: &str,
        only: Option<&str>,
        scratch: Option<PathBuf>,
    ) -> Result<Self> {
        let mut rels: Vec<String> = match only {
            Some(rel) => vec![rel.to_string()],
            None => {
                let listing = source.list()?;
                if let Some(skip) = listing.skipped.first() {
                    return Err(bad(
                        &source.display(&skip.path),
                        format!("cannot be listed: {}", skip.reason),
                    ));
                }
                let mut out = Vec::new();
                for file in listing.files {
                    if is_beside_shards(&file.rel) {
                        continue;
                    }
                    if !is_tar_name(&file.rel) {
                        return Err(bad(
                            &source.display(&file.rel),
                            "is in the WebDataset input but is not a tar shard (.tar, .tar.gz, .tgz, .tar.zst); use --input-format files to pack a tree of raw files",
                        ));
                    }
                    out.push(file.rel);
                }
                out
            }
        };
        if rels.is_empty() {
            return Err(Error::EmptyInput {
                root: root.to_string(),
                detail: ": it holds no tar shard (.tar, .tar.gz, .tgz, .tar.zst)".into(),
            });
        }
        if rels.len() > MAX_SHARDS {
            return Err(bad(
                root,
                format!("has {} tar shards (at most {MAX_SHARDS})", rels.len()),
            ));
        }
        rels.sort();
        let files: Vec<ShardFile> = rels
            .into_iter()
            .map(|rel| ShardFile {
                full: source.display(&rel),
                rel,
                key_prefix: String::new(),
            })
            .collect();
        Ok(Self {
            source,
            root: root.to_string(),
            files,
            scratch,
            bodies: Mutex::new(Vec::new()),
        })
    }

    /// Puts `prefix` (the shard's stem or path) before the keys of its samples
    /// (`pack --key-prefix`).
    pub fn with_key_prefix(mut self, prefix: KeyPrefix) -> Self {
        for file in &mut self.files {
            file.key_prefix = prefix.of(&file.rel);
        }
        self
    }

    pub(super) fn bodies(&self) -> Vec<Body> {
        self.bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
