//! [`MdsDataset`]: an MDS dataset's `index.json` read and checked, its shards opened, and
//! the listing of its samples.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use shardsmith_manifest::Skipped;
use shardsmith_store::{InputSource, RangeRead, ReadError};

use super::index::Shard;
use super::index_error::IndexError;
use super::record::Planned;
use super::shard::Window;
use super::shard_error::{RecordError, ShardError};
use super::{index, record, shard};
use crate::keys::KeyPrefix;
use crate::sample::{SampleListing, SampleSpec};
use crate::{Error, Result};

/// The index at the root of an MDS dataset.
pub(crate) const INDEX: &str = "index.json";

/// Largest `index.json` read (a million shards take about 500 MB).
pub(super) const MAX_INDEX: u64 = 1 << 30;

/// The text of `rel`; the error is the reason.
pub(super) fn read_index(source: &dyn InputSource, rel: &str) -> Result<Vec<u8>, IndexError> {
    let mut text = Vec::new();
    source
        .open(rel)
        .map_err(|e| match e {
            ReadError::Vanished => IndexError::Missing,
            e => IndexError::Open(e),
        })?
        .take(MAX_INDEX)
        .read_to_end(&mut text)
        .map_err(IndexError::Read)?;
    Ok(text)
}

/// True when the input is an MDS dataset: a root `index.json` whose `version` is 2 and
/// whose shards have `"format": "mds"` (or the one file `only` names is such an
/// `index.json`). [`MdsDataset::open`] reads `index.json` at the source's root, so
/// `only` must be exactly `index.json` (an input naming the file is rooted at its
/// directory, as `LocalTree::for_path` does).
pub fn is_mds_input(source: &dyn InputSource, only: Option<&str>) -> bool {
    if only.is_some_and(|rel| rel != INDEX) {
        return false;
    }
    read_index(source, INDEX).is_ok_and(|text| index::looks_like_index(&text))
}

/// The samples of an MDS dataset.
pub struct MdsDataset {
    pub(super) source: Arc<dyn InputSource>,
    pub(super) root: String,
    pub(super) shards: Vec<Shard>,
    /// Shard numbers in the index (the messages' "shard entry N"), parallel to `shards`.
    pub(super) numbers: Vec<usize>,
    pub(super) scratch: Option<PathBuf>,
    /// The file each shard is read from, once opened.
    pub(super) read_from: Vec<OnceLock<String>>,
    /// Decompressed copies: every one when there is a scratch directory, else the last.
    pub(super) copies: Mutex<HashMap<usize, Arc<dyn RangeRead>>>,
    /// What goes before a key column's value (`pack --key-prefix`).
    pub(super) key_prefix: KeyPrefix,
}

impl MdsDataset {
    /// The dataset at `source`'s root: `index.json`, either listing shards directly or a
    /// merged index whose shard basenames carry sub-directories (streaming's
    /// `merge_index` output). `key_column` (pack's `--key-column`, default `key`): when
    /// the dataset has that column (as text), it is the sample key; otherwise the key is
    /// the global sample index, `{:09}`. `scratch`: directory for decompressed copies of
    /// compressed shards (unnamed temp files); `None` decompresses a shard into memory
    /// when read. Parses `index.json` only; shards are read by `samples()`.
    pub fn open(
        source: Arc<dyn InputSource>,
        root: &str,
        key_column: &str,
        scratch: Option<PathBuf>,
    ) -> Result<Self> {
        let bad = |reason: IndexError| Error::BadInput {
            path: source.display(INDEX),
            reason: reason.to_string(),
        };
        let text = read_index(&*source, INDEX).map_err(bad)?;
        let shards = index::parse(&text, "", key_column).map_err(bad)?;
        if shards.iter().all(|s| s.samples == 0) {
            return Err(Error::EmptyInput {
                root: root.to_string(),
                detail: format!(": its {INDEX} lists no samples"),
            });
        }
        Ok(Self {
            root: root.to_string(),
            numbers: (0..shards.len()).collect(),
            read_from: shards.iter().map(|_| OnceLock::new()).collect(),
            shards,
            scratch,
            copies: Mutex::new(HashMap::new()),
            source,
            key_prefix: KeyPrefix::None,
        })
    }

    /// Puts `prefix` (the shard's stem or path) before every key column value; keys
    /// that are sample indices are unique already and stay as they are.
    pub fn with_key_prefix(mut self, prefix: KeyPrefix) -> Self {
        self.key_prefix = prefix;
        self
    }

    /// Restricts the dataset to the shards whose rel paths (raw or compressed file) are
    /// in `shards` (`cat` reads one shard). Keys stay those of the whole dataset.
    pub fn only_shards(mut self, shards: &BTreeSet<String>) -> Self {
        let keep: Vec<bool> = self
            .shards
            .iter()
            .map(|s| {
                shards.contains(&s.raw.rel)
                    || s.zip.as_ref().is_some_and(|z| shards.contains(&z.rel))
            })
            .collect();
        let mut k = keep.iter();
        self.shards
            .retain(|_| *k.next().expect("one flag per shard"));
        let mut k = keep.iter();
        self.numbers
            .retain(|_| *k.next().expect("one flag per shard"));
        self.read_from = self.shards.iter().map(|_| OnceLock::new()).collect();
        // Copies are kept by position in `shards`, which just changed.
        self.copies = Mutex::new(HashMap::new());
        self
    }

    /// The position in `shards` of the shard holding global sample `origin`.
    pub(super) fn shard_of(&self, origin: u64) -> usize {
        self.shards
            .partition_point(|s| s.first <= origin)
            .saturating_sub(1)
    }

    /// The bytes of shard `i` (position in `shards`).
    pub(super) fn data(&self, i: usize) -> Result<Arc<dyn RangeRead>> {
        let lock = || {
            self.copies
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(data) = lock().get(&i) {
            return Ok(data.clone());
        }
        let opened = shard::open(
            &*self.source,
            INDEX,
            self.numbers[i],
            &self.shards[i],
            self.scratch.as_deref(),
        )?;
        let _ = self.read_from[i].set(opened.rel);
        if opened.copy {
            let mut copies = lock();
            if self.scratch.is_none() {
                copies.clear();
            }
            copies.insert(i, opened.data.clone());
        }
        Ok(opened.data)
    }

    /// The file shard `i` is read from (the compressed one until opened, when the index
    /// lists one, as MDSWriter keeps only that).
    pub(super) fn shard_rel(&self, i: usize) -> &str {
        match self.read_from[i].get() {
            Some(rel) => rel,
            None => {
                let s = &self.shards[i];
                s.zip.as_ref().map_or(&s.raw.rel, |z| &z.rel)
            }
        }
    }

    pub(super) fn bad(&self, i: usize, reason: ShardError) -> Error {
        Error::BadInput {
            path: self.source.display(self.shard_rel(i)),
            reason: reason.to_string(),
        }
    }

    /// Lists the samples of shard `i` into `listing`.
    pub(super) fn list_shard(
        &self,
        i: usize,
        listing: &mut SampleListing,
        window: &mut Window,
    ) -> Result<()> {
        let shard = &self.shards[i];
        if shard.samples == 0 {
            return Ok(());
        }
        let data = self.data(i)?;
        let offsets = shard::offsets(&*data, shard.samples).map_err(|e| self.bad(i, e))?;
        let set = &shard.columns;
        window.reset();
        for local in 0..shard.samples {
            let (start, end) = (offsets[local as usize], offsets[local as usize + 1]);
            let at = |error: RecordError| {
                let sample = ShardError::Sample {
                    local,
                    start,
                    end,
                    error,
                };
                self.bad(i, sample)
            };
            let record = window
                .read(&*data, start, end, true)
                .map_err(|e| at(RecordError::Unreadable(e)))?;
            let values = shard::split(set, record).map_err(at)?;
            let global = shard.first + local;
            let (key, fields) = match record::plan(set, &values, global).map_err(at)? {
                Planned::Sample(key, fields) => (key, fields),
                Planned::Skip(reason) => {
                    listing.skipped.push(Skipped {
                        path: format!("{}#sample={local}", self.shard_rel(i)),
                        reason,
                    });
                    continue;
                }
            };
            // A key used twice is refused by the pack (`keys::check_unique`), never merged.
            let key = match set.key {
                Some(_) => self.key_prefix.apply(self.shard_rel(i), &key),
                None => key,
            };
            listing.samples.push(SampleSpec {
                key,
                fields,
                origin: global,
            });
        }
        Ok(())
    }
}
