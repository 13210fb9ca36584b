//! MosaicML Streaming (MDS) datasets as a sample source: every record of every shard, in
//! `index.json` order (`../shared/reference/mds.md` §2–§6, §11).
//!
//! Each column is a field named after it (lowercased), whose bytes are what our writers
//! take back for the column's encoding ([`values`]), so re-packing keeps the values; the
//! encodings are suggested to typed outputs. The key is the key column's value when the
//! shards have it as text, else the global sample index (`000000042`). Shards are read
//! raw when their raw file is present, else decompressed (into unnamed scratch files, or
//! memory when no scratch directory is given). The listing checks every shard against
//! the index (size, count, offsets, column sizes) and holds no shard data.

mod index;
mod index_error;
mod pil;
mod problem;
mod record;
mod shard;
mod shard_error;
mod values;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bytes;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use shardsmith_manifest::Skipped;
use shardsmith_store::{InputSource, RangeRead, ReadError};

use self::index::Shard;
use self::index_error::IndexError;
use self::problem::Problem;
use self::record::Planned;
use self::shard::Window;
use self::shard_error::{RecordError, ShardError};
use crate::columns::Encoding;
use crate::content::Validation;
use crate::keys::KeyPrefix;
use crate::sample::{FieldSpec, Loaded, SampleListing, SampleReader, SampleSource, SampleSpec};
use crate::{Error, Result};

/// The index at the root of an MDS dataset.
pub(crate) const INDEX: &str = "index.json";

/// Largest `index.json` read (a million shards take about 500 MB).
const MAX_INDEX: u64 = 1 << 30;

/// The text of `rel`; the error is the reason.
fn read_index(source: &dyn InputSource, rel: &str) -> Result<Vec<u8>, IndexError> {
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
    source: Arc<dyn InputSource>,
    root: String,
    shards: Vec<Shard>,
    /// Shard numbers in the index (the messages' "shard entry N"), parallel to `shards`.
    numbers: Vec<usize>,
    scratch: Option<PathBuf>,
    /// The file each shard is read from, once opened.
    read_from: Vec<OnceLock<String>>,
    /// Decompressed copies: every one when there is a scratch directory, else the last.
    copies: Mutex<HashMap<usize, Arc<dyn RangeRead>>>,
    /// What goes before a key column's value (`pack --key-prefix`).
    key_prefix: KeyPrefix,
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
    fn shard_of(&self, origin: u64) -> usize {
        self.shards
            .partition_point(|s| s.first <= origin)
            .saturating_sub(1)
    }

    /// The bytes of shard `i` (position in `shards`).
    fn data(&self, i: usize) -> Result<Arc<dyn RangeRead>> {
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
    fn shard_rel(&self, i: usize) -> &str {
        match self.read_from[i].get() {
            Some(rel) => rel,
            None => {
                let s = &self.shards[i];
                s.zip.as_ref().map_or(&s.raw.rel, |z| &z.rel)
            }
        }
    }

    fn bad(&self, i: usize, reason: ShardError) -> Error {
        Error::BadInput {
            path: self.source.display(self.shard_rel(i)),
            reason: reason.to_string(),
        }
    }

    /// Lists the samples of shard `i` into `listing`.
    fn list_shard(&self, i: usize, listing: &mut SampleListing, window: &mut Window) -> Result<()> {
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

impl SampleSource for MdsDataset {
    fn describe(&self) -> String {
        self.root.clone()
    }

    fn samples(&self) -> Result<SampleListing> {
        let mut listing = SampleListing::default();
        let mut window = Window::default();
        for i in 0..self.shards.len() {
            self.list_shard(i, &mut listing, &mut window)?;
        }
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let i = self.shard_of(sample.origin);
        let shard = &self.shards[i];
        let column = shard
            .columns
            .columns
            .iter()
            .find(|c| c.field == field.ext)
            .map_or(&*field.ext, |c| c.name.as_str());
        format!(
            "{}#sample={}:{column}",
            self.shard_rel(i),
            sample.origin - shard.first
        )
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, String> {
        let mut reader = Reader::new(self, std::slice::from_ref(sample));
        let mut buf = Vec::new();
        let ranges = match reader.load(0, &mut buf) {
            Ok(Ok(Loaded::Memory(ranges))) => ranges,
            Ok(Ok(Loaded::Streams(_))) => unreachable!("MDS fields are read into memory"),
            Ok(Err(skips)) => {
                return Err(skips.first().map_or_else(String::new, |s| s.reason.clone()));
            }
            Err(e) => return Err(e.to_string()),
        };
        let position = sample
            .fields
            .iter()
            .position(|f| f.ext == field.ext)
            .ok_or_else(|| format!("sample `{}` has no field `{}`", sample.key, field.ext))?;
        let (start, end) = ranges[position];
        Ok(buf[start..end.min(start + n)].to_vec())
    }

    fn suggested_encodings(&self) -> BTreeMap<String, Encoding> {
        index::suggested(&self.shards)
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        Some(self.shard_rel(self.shard_of(sample.origin)).to_string())
    }

    fn shuffle_refusal(&self) -> Option<String> {
        (self.scratch.is_none() && self.shards.iter().any(|s| s.zip.is_some())).then(|| {
            "compressed MDS shards are decompressed whole to be read; shuffling them needs a scratch directory".into()
        })
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        _validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        Ok(Box::new(Reader::new(self, samples)))
    }
}

/// Reads samples of one output shard, keeping the last input shard open.
struct Reader<'a> {
    dataset: &'a MdsDataset,
    samples: &'a [SampleSpec],
    current: Option<(usize, Arc<dyn RangeRead>)>,
    window: Window,
    /// End of the last record read, to read ahead only when reads are sequential.
    last_end: u64,
}

impl<'a> Reader<'a> {
    fn new(dataset: &'a MdsDataset, samples: &'a [SampleSpec]) -> Self {
        Self {
            dataset,
            samples,
            current: None,
            window: Window::default(),
            last_end: u64::MAX,
        }
    }
}

impl SampleReader for Reader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let dataset = self.dataset;
        let sample = &self.samples[index];
        let i = dataset.shard_of(sample.origin);
        let data = match &self.current {
            Some((open, data)) if *open == i => data.clone(),
            _ => {
                let data = dataset.data(i)?;
                self.current = Some((i, data.clone()));
                self.window.reset();
                self.last_end = u64::MAX;
                data
            }
        };
        let shard = &dataset.shards[i];
        let local = sample.origin - shard.first;
        let (start, end) = shard::record_bounds(&*data, local).map_err(|e| dataset.bad(i, e))?;
        let at = |error: RecordError| {
            let sample = ShardError::Sample {
                local,
                start,
                end,
                error,
            };
            dataset.bad(i, sample)
        };
        let record = self
            .window
            .read(&*data, start, end, start == self.last_end)
            .map_err(|e| at(RecordError::Unreadable(e)))?;
        self.last_end = end;
        let set = &shard.columns;
        let values = shard::split(set, record).map_err(at)?;
        buf.clear();
        let mut ranges = Vec::with_capacity(sample.fields.len());
        for field in &sample.fields {
            let c = set
                .fields
                .iter()
                .copied()
                .find(|&c| set.columns[c].field == field.ext)
                .ok_or_else(|| at(RecordError::NoColumn(field.ext.to_string())))?;
            let column = &set.columns[c];
            let value = match column.kind.convert(values[c]) {
                Ok(value) => value,
                Err(Problem::Corrupt(why)) => {
                    return Err(at(RecordError::Corrupt {
                        column: column.name.clone(),
                        why,
                    }));
                }
                Err(Problem::Unsupported(why)) => {
                    return Ok(Err(vec![Skipped {
                        path: dataset.field_path(sample, field),
                        reason: why,
                    }]));
                }
            };
            if value.len() as u64 != field.size {
                return Err(Error::InputChanged {
                    path: dataset.field_path(sample, field),
                    listed: field.size,
                    read: value.len() as u64,
                });
            }
            let from = buf.len();
            buf.extend_from_slice(&value);
            ranges.push((from, buf.len()));
        }
        Ok(Ok(Loaded::Memory(ranges)))
    }
}
