//! WebDataset tar shards written by any tool as a sample source: members grouped into
//! samples exactly as webdataset 1.0.2 groups them (consecutive regular members with
//! the same key, the key being the name up to the first dot of its basename), samples
//! in shard order, then tar order.
//!
//! What a reader would drop or mis-key is left out with the reason naming the shard and
//! member (hidden and extension-less names, `__meta__` members, links and other
//! non-regular members, non-UTF-8 names, paths a file tree cannot hold), and so are
//! samples webdataset would fail on: a field repeated within a sample. A key seen
//! before (non-contiguous in its shard, or in an earlier shard) is refused by the pack
//! naming both samples ([`crate::keys::check_unique`]), never merged. Damage (not a tar, a bad checksum, a truncated member or
//! header, a corrupt compressed stream) is an [`Error::BadInput`] naming the shard and
//! the byte offset; never a silent end as in Python's `tarfile`.
//!
//! Plain tars are walked by positioned reads with a read-ahead buffer; a gzip or zstd
//! shard (told by its magic bytes, not its name) is decompressed once while it is walked,
//! into a temporary file in the scratch directory when one is given, so samples are then
//! read by positioned reads from that copy. The listing holds one [`SampleSpec`] per
//! sample; a sample's place in its shard is its `origin`, and reading walks its headers
//! again from there.

mod braces;
mod bytes;
mod list;
mod read;
mod shard;
mod walk;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use shardsmith_manifest::{MANIFEST_FILE, SUMS_FILE};
use shardsmith_store::InputSource;

pub use braces::{BraceError, expand_braces};

use self::shard::{Body, MAX_SHARDS, ShardFile};
use crate::content::Validation;
use crate::keys::KeyPrefix;
use crate::sample::{FieldSpec, SampleListing, SampleReader, SampleSource, SampleSpec};
use crate::{Error, Result};

/// Names of tar shards (the content decides the compression).
const TAR_NAMES: [&str; 5] = [".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"];

fn is_tar_name(rel: &str) -> bool {
    TAR_NAMES.iter().any(|ext| rel.ends_with(ext))
}

/// What a WebDataset tree holds beside its shards and that is not read: hidden files
/// and directories, the manifest and sums shardsmith writes, JSON files (wids shard
/// indices, img2dataset's `_stats.json`) and img2dataset's per-shard `.parquet` metadata.
fn is_beside_shards(rel: &str) -> bool {
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
    source: Arc<dyn InputSource>,
    root: String,
    files: Vec<ShardFile>,
    scratch: Option<PathBuf>,
    /// Where each shard's tar bytes are, once listed.
    bodies: Mutex<Vec<Body>>,
}

fn bad(path: &str, reason: impl Into<String>) -> Error {
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

    fn bodies(&self) -> Vec<Body> {
        self.bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl SampleSource for TarShards {
    fn describe(&self) -> String {
        self.root.clone()
    }

    /// Walks every shard (in parallel; the result in shard order), spilling compressed
    /// ones into the scratch directory when there is one.
    fn samples(&self) -> Result<SampleListing> {
        let scratch = self.scratch.as_deref();
        let listed: Vec<Result<list::Listed>> = self
            .files
            .par_iter()
            .enumerate()
            .map(|(i, file)| list::list_shard(self.source.as_ref(), file, i, scratch))
            .collect();
        let mut listing = SampleListing::default();
        let mut bodies = Vec::with_capacity(listed.len());
        for (i, shard) in listed.into_iter().enumerate() {
            let shard = shard?;
            let prefix = &self.files[i].key_prefix;
            bodies.push(shard.body);
            listing.skipped.extend(shard.skipped);
            listing.samples.reserve(shard.samples.len());
            for mut sample in shard.samples {
                if !prefix.is_empty() {
                    sample.key.insert_str(0, prefix);
                }
                listing.samples.push(sample);
            }
        }
        *self
            .bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = bodies;
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let (shard, _) = shard::place(sample);
        match self.files.get(shard) {
            Some(file) => format!(
                "{}/{}.{}",
                file.rel,
                file.member_key(&sample.key),
                field.source_ext
            ),
            None => sample.rel(field),
        }
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        let (shard, _) = shard::place(sample);
        self.files.get(shard).map(|f| f.rel.clone())
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, String> {
        let one = std::slice::from_ref(sample);
        let mut reader = self
            .reader(one, Validation::None)
            .map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        match reader.load(0, &mut buf).map_err(|e| e.to_string())? {
            Ok(crate::sample::Loaded::Memory(ranges)) => {
                let i = sample
                    .fields
                    .iter()
                    .position(|f| f == field)
                    .ok_or("no such field")?;
                let (start, end) = ranges[i];
                Ok(buf[start..end.min(start + n)].to_vec())
            }
            Ok(crate::sample::Loaded::Streams(mut streams)) => {
                let i = sample
                    .fields
                    .iter()
                    .position(|f| f == field)
                    .ok_or("no such field")?;
                let mut head = Vec::with_capacity(n);
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(&mut streams[i], n as u64),
                    &mut head,
                )
                .map_err(|e| format!("cannot be read: {e}"))?;
                Ok(head)
            }
            Err(skips) => Err(skips
                .first()
                .map_or_else(|| "cannot be read".into(), |s| s.reason.clone())),
        }
    }

    fn shuffle_refusal(&self) -> Option<String> {
        let bodies = self.bodies();
        let streamed = self
            .files
            .iter()
            .zip(&bodies)
            .find(|(_, body)| !body.random_access());
        streamed.map(|(file, _)| {
            format!(
                "`{}` is compressed and was not decompressed into a scratch copy, so its samples can only be read in order",
                file.rel
            )
        })
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        let bodies = self.bodies();
        if bodies.len() != self.files.len() {
            return Err(Error::Setting(
                "the WebDataset input is read before it was listed".into(),
            ));
        }
        Ok(Box::new(read::TarReader::new(
            self.source.as_ref(),
            &self.files,
            bodies,
            samples,
            validation,
        )))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_braces;
#[cfg(test)]
mod tests_damage;
#[cfg(test)]
mod tests_sparse;
