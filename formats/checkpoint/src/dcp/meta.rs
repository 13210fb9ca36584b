//! The storage records of a DCP `.metadata` (`storage_data`: `MetadataIndex(fqn,
//! offset, index)` → `_StorageInfo(relative_path, offset, length[,
//! transform_descriptors])`), read once for every check that needs where an item lies
//! and how it is stored: the data file inspector, the tensor reader of `diff`, `ls` and
//! the metadata-against-data check of `verify`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::dcp_coverage::ints;
use crate::pickle::{self, Pickle};
use crate::pickle_inspector::MAX_PICKLE_FILE;

/// One item of `storage_data`: a tensor chunk or a bytes item, where it is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Fully qualified name of the state-dict entry (`model.layers.0.weight`).
    pub fqn: String,
    /// The chunk's offsets in the tensor; `None` for a bytes item.
    pub chunk: Option<Vec<u64>>,
    /// The data file, relative to the checkpoint directory, as recorded.
    pub file: String,
    /// First byte of the item in the file.
    pub offset: u64,
    /// Bytes of the item in the file (for a tensor of a safetensors-format file, the
    /// tensor's bytes in the blob that starts at `offset`).
    pub length: u64,
    /// `transform_descriptors`, in the order `dcp.load` applies them to the bytes
    /// (`stream.zstd/1`); empty when the bytes are the item itself.
    pub transforms: Vec<String>,
    /// Most bytes the item may decode to through its transforms: for a tensor chunk,
    /// its elements at 16 bytes each (the widest dtype, whatever `.metadata` says) and
    /// [`ZIP_SLACK`] for the torch zip around them; for a bytes item, or a chunk
    /// `.metadata` does not describe, [`MAX_PICKLE_FILE`].
    pub limit: u64,
}

/// Bytes of a torch zip beyond its one storage (`data.pkl`, version records, padding,
/// central directory): a few kB in practice.
pub const ZIP_SLACK: u64 = 1 << 20;

impl Item {
    /// One past the item's last byte (saturating: a hostile length).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.length)
    }

    /// How findings name it: ``tensor `w` chunk at [515, 0]`` or ``item `optim.lr` ``.
    pub fn label(&self) -> String {
        match &self.chunk {
            Some(at) => {
                let at: Vec<String> = at.iter().map(u64::to_string).collect();
                format!("tensor `{}` chunk at [{}]", self.fqn, at.join(", "))
            }
            None => format!("item `{}`", self.fqn),
        }
    }
}

/// Every readable item of `storage_data` (records whose path, offset or length are not
/// readable are left out: the coverage check names what `dcp.load` cannot look up).
pub fn items(p: &Pickle) -> Vec<Item> {
    let mut out = Vec::new();
    let Some(storage) = p.get(p.root, "storage_data") else {
        return out;
    };
    // Every chunk's elements, by (tensor, offsets).
    let mut chunks: BTreeMap<(&str, Vec<u64>), Option<u64>> = BTreeMap::new();
    let tensors = p.get(p.root, "state_dict_metadata");
    for &(k, v) in tensors.and_then(|t| p.dict_entries(t)).unwrap_or(&[]) {
        let (Some(fqn), Some(list)) = (p.str(k), p.get(v, "chunks")) else {
            continue;
        };
        for &c in p.items(list).unwrap_or(&[]) {
            let offsets = p.get(c, "offsets").and_then(|o| ints(p, o));
            let sizes = p.get(c, "sizes").and_then(|s| ints(p, s));
            if let Some(offsets) = offsets {
                let numel = sizes.and_then(|s| s.iter().try_fold(1u64, |n, &d| n.checked_mul(d)));
                chunks.insert((fqn, offsets), numel);
            }
        }
    }
    for &(k, v) in p.dict_entries(storage).unwrap_or(&[]) {
        let Some(fqn) = p.get(k, "fqn").and_then(|id| p.str(id)) else {
            continue;
        };
        let chunk = p.get(k, "offset").and_then(|o| ints(p, o));
        let file = p.get(v, "relative_path").and_then(|id| p.str(id));
        let offset = p.get(v, "offset").and_then(|id| p.int(id));
        let length = p.get(v, "length").and_then(|id| p.int(id));
        let (Some(file), Some(offset), Some(length)) = (file, offset, length) else {
            continue;
        };
        let (Ok(offset), Ok(length)) = (u64::try_from(offset), u64::try_from(length)) else {
            continue;
        };
        let transforms = p
            .get(v, "transform_descriptors")
            .and_then(|t| p.items(t))
            .unwrap_or(&[])
            .iter()
            .map(|&d| p.str(d).unwrap_or("?").to_string())
            .collect();
        let numel = chunk
            .as_ref()
            .and_then(|at| *chunks.get(&(fqn, at.clone()))?);
        let limit = numel
            .and_then(|n| n.checked_mul(16))
            .map_or(MAX_PICKLE_FILE, |b| b.saturating_add(ZIP_SLACK));
        out.push(Item {
            fqn: fqn.to_string(),
            chunk,
            file: file.to_string(),
            offset,
            length,
            transforms,
            limit,
        });
    }
    out
}

/// The items `.metadata` in `dir` stores in the data file `name`, sorted by offset;
/// `None` when there is no `.metadata`, it is too large or not a readable pickle.
///
/// Every data file of a checkpoint asks: the `.metadata` of the last few directories is
/// parsed once and kept (keyed by its path, size and modification time), so a
/// checkpoint of a thousand ranks does not parse it a thousand times.
pub fn items_of(dir: &Path, name: &str) -> Option<Vec<Item>> {
    let by_file = by_file(&dir.join(".metadata"))?;
    Some(by_file.get(name).cloned().unwrap_or_default())
}

/// Items by data file, sorted by offset.
type ByFile = BTreeMap<String, Vec<Item>>;
/// A parsed `.metadata`: its path, size and modification time, and its items.
type Cached = (PathBuf, u64, Option<SystemTime>, Arc<ByFile>);

/// How many parsed `.metadata` are kept.
const CACHED: usize = 4;

fn by_file(meta: &Path) -> Option<Arc<ByFile>> {
    static CACHE: Mutex<Vec<Cached>> = Mutex::new(Vec::new());
    let stat = std::fs::metadata(meta).ok()?;
    if stat.len() > MAX_PICKLE_FILE {
        return None;
    }
    let key = (meta.to_path_buf(), stat.len(), stat.modified().ok());
    let cache = || {
        CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some((.., found)) = cache()
        .iter()
        .find(|(p, len, time, _)| (p, *len, *time) == (&key.0, key.1, key.2))
    {
        return Some(Arc::clone(found));
    }
    let bytes = std::fs::read(meta).ok()?;
    let p = pickle::parse(&bytes).ok()?;
    let mut by_file = ByFile::new();
    for item in items(&p) {
        by_file.entry(item.file.clone()).or_default().push(item);
    }
    for list in by_file.values_mut() {
        list.sort_by_key(|a| (a.offset, a.length));
    }
    let by_file = Arc::new(by_file);
    let mut cache = cache();
    if cache.len() == CACHED {
        cache.remove(0);
    }
    cache.push((key.0, key.1, key.2, Arc::clone(&by_file)));
    Some(by_file)
}
