//! [`LitdataDataset`]: a LitData dataset's `index.json` read and checked, and the listing
//! of its items, chunk by chunk.

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use arrow_schema::DataType;

use serde_json::Value;
use shardsmith_manifest::Skipped;
use shardsmith_store::{InputSource, ReadError};

use super::leaf::{Kind, READ};
use crate::keys::KeyPrefix;
use crate::litdata::chunk;
use crate::litdata::compressed::{Compression, Wrap, inflate_file, unframe, unsample};
use crate::litdata::footer::{self, FooterRows};
use crate::litdata::index::{INDEX, is_litdata_index};
use crate::litdata::spec::{self, KEY};
use crate::mds::input::problem::Problem;
use crate::parquet::nested;
use crate::sample::{FieldSpec, SampleListing, SampleSpec};
use crate::{Error, Result};

/// Largest `index.json` read.
const MAX_INDEX: u64 = 1 << 30;

/// One leaf of the items' pytree.
#[derive(Debug)]
pub(super) struct Leaf {
    /// Its path in the pytree (`meta.a`).
    pub(super) name: String,
    /// The field it becomes (its path, lowercased).
    pub(super) field: String,
    /// Its `data_format` entry.
    pub(super) format: String,
    pub(super) kind: Kind,
}

/// One chunk the index lists.
#[derive(Clone, Debug)]
pub(super) struct Chunk {
    pub(super) rel: String,
    pub(super) items: u64,
    /// Global index of its first item.
    pub(super) first: u64,
    /// Its `chunk_bytes`: the size of its bytes once inflated, for a `chunk`-wrapped one.
    pub(super) bytes: Option<u64>,
}

/// The samples of a LitData dataset.
pub struct LitdataDataset {
    pub(super) source: Arc<dyn InputSource>,
    pub(super) root: String,
    pub(super) chunks: Vec<Chunk>,
    pub(super) leaves: Vec<Leaf>,
    /// The leaf holding the sample key (`__key__`, a `str`).
    pub(super) key: Option<usize>,
    pub(super) key_prefix: KeyPrefix,
    /// How its chunks are wrapped in zstd.
    pub(super) compression: Compression,
}

fn read_index(source: &dyn InputSource) -> std::result::Result<Vec<u8>, ReadError> {
    let mut text = Vec::new();
    source
        .open(INDEX)?
        .take(MAX_INDEX)
        .read_to_end(&mut text)
        .map_err(|e| ReadError::Unreadable(e.to_string()))?;
    Ok(text)
}

/// True when the input is a LitData dataset: a root `index.json` with `chunks` and a
/// `config` naming a `data_spec` or `item_loader` (or the one file `only` names is it).
pub fn is_litdata_input(source: &dyn InputSource, only: Option<&str>) -> bool {
    if only.is_some_and(|rel| rel != INDEX) {
        return false;
    }
    read_index(source)
        .ok()
        .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
        .is_some_and(|v| is_litdata_index(&v))
}

impl LitdataDataset {
    /// The dataset at `source`'s root, `shown` as the user named it. Reads `index.json`
    /// only; refuses what the input cannot read (encrypted chunks, a codec other than
    /// zstd, another item loader, a serializer of [`Kind`] none) naming the dataset and
    /// the reason.
    pub fn open(source: Arc<dyn InputSource>, shown: &str) -> Result<Self> {
        let bad = |reason: String| Error::BadInput {
            path: source.display(INDEX),
            reason,
        };
        let text = read_index(source.as_ref()).map_err(|e| Error::BadInput {
            path: shown.to_string(),
            reason: match e {
                ReadError::Vanished => "is not a LitData dataset: it has no index.json".into(),
                e => format!("is not a LitData dataset: its index.json cannot be read ({e})"),
            },
        })?;
        let index: Value =
            serde_json::from_slice(&text).map_err(|e| bad(format!("is not JSON: {e}")))?;
        if !is_litdata_index(&index) {
            return Err(Error::BadInput {
                path: shown.to_string(),
                reason: "is not a LitData dataset: its index.json has no `chunks` and `config` of litdata.optimize".into(),
            });
        }
        let config = &index["config"];
        if !config["encryption"].is_null() {
            return Err(bad(format!(
                "is a LitData dataset of encrypted chunks (encryption {}), which shardsmith does not read",
                config["encryption"]
            )));
        }
        let compression = Compression::of_config(config).map_err(|reason| {
            bad(format!(
                "is a LitData dataset shardsmith does not read: {reason}"
            ))
        })?;
        let ipc = &config["ipc_compression"];
        if !(ipc.is_null() || *ipc == "zstd" || *ipc == "lz4") {
            return Err(bad(format!(
                "is a LitData dataset of chunks whose Arrow footers are compressed with {}, which shardsmith does not read (it reads zstd and lz4)",
                ipc
            )));
        }
        if config["item_loader"] != "PyTreeLoader" {
            return Err(bad(format!(
                "is a LitData dataset of item loader {}, which shardsmith does not read (PyTreeLoader, optimize's default, it does)",
                config["item_loader"]
            )));
        }
        let names = spec::leaf_names(config["data_spec"].as_str().unwrap_or_default())
            .map_err(|e| bad(e.to_string()))?;
        let formats: Vec<&str> = config["data_format"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if formats.len() != names.len() {
            return Err(bad(format!(
                "its data_format names {} serializers, its data_spec {} leaves",
                formats.len(),
                names.len()
            )));
        }
        let mut leaves = Vec::with_capacity(names.len());
        let mut key = None;
        for (name, format) in names.iter().zip(&formats) {
            let kind = Kind::from_format(format).ok_or_else(|| {
                bad(format!(
                    "stores leaf `{name}` with LitData's `{format}` serializer, which shardsmith does not read (it reads {READ})"
                ))
            })?;
            if name == KEY && kind.is_text() && key.is_none() {
                key = Some(leaves.len());
            }
            let field = name.to_lowercase();
            if key != Some(leaves.len()) && leaves.iter().any(|l: &Leaf| l.field == field) {
                return Err(bad(format!(
                    "has two leaves named `{field}` once lowercased, which would be one field"
                )));
            }
            leaves.push(Leaf {
                name: name.clone(),
                field,
                format: (*format).to_string(),
                kind,
            });
        }
        let mut chunks = Vec::new();
        let mut first = 0;
        for (i, entry) in index["chunks"].as_array().into_iter().flatten().enumerate() {
            let (Some(rel), Some(items)) =
                (entry["filename"].as_str(), entry["chunk_size"].as_u64())
            else {
                return Err(bad(format!(
                    "chunk entry {i} has no filename or chunk_size"
                )));
            };
            if rel.contains("..") || rel.starts_with('/') {
                return Err(bad(format!(
                    "chunk entry {i} names `{rel}`, outside the dataset"
                )));
            }
            chunks.push(Chunk {
                rel: rel.to_string(),
                items,
                first,
                bytes: entry["chunk_bytes"].as_u64(),
            });
            first += items;
        }
        Ok(Self {
            source,
            root: shown.to_string(),
            chunks,
            leaves,
            key,
            key_prefix: KeyPrefix::None,
            compression,
        })
    }

    /// Puts `prefix` (the chunk's stem or path) before every `__key__`; keys that are
    /// item indices are unique already and stay as they are.
    pub fn with_key_prefix(mut self, prefix: KeyPrefix) -> Self {
        self.key_prefix = prefix;
        self
    }

    /// Only the items of chunk `rel` (`cat --shard`); keys stay those of the dataset.
    pub fn only_chunk(mut self, rel: &str) -> Self {
        self.chunks.retain(|c| c.rel == rel);
        self
    }

    /// The position in `chunks` of the chunk holding global item `origin`.
    pub(super) fn chunk_of(&self, origin: u64) -> usize {
        self.chunks
            .partition_point(|c| c.first <= origin)
            .saturating_sub(1)
    }

    pub(super) fn bad(&self, i: usize, reason: impl std::fmt::Display) -> Error {
        Error::BadInput {
            path: self.source.display(&self.chunks[i].rel),
            reason: reason.to_string(),
        }
    }

    /// The items of chunk `i`, checked against the index; a chunk wrapped in zstd is
    /// inflated first (the whole of it in memory, as a plain chunk is).
    pub(super) fn load_chunk(&self, i: usize) -> Result<Items> {
        let chunk = &self.chunks[i];
        let damaged =
            |e: &dyn std::fmt::Display| self.bad(i, format!("is a damaged LitData chunk: {e}"));
        let file = self
            .source
            .open(&chunk.rel)
            .map_err(|e| self.bad(i, format!("cannot be read: {e}")))?;
        let wrap = self.compression.wrap_of(&chunk.rel);
        let data = if wrap == Wrap::Chunk {
            let data = inflate_file(file).map_err(|e| damaged(&e))?;
            if let Some(stated) = chunk.bytes
                && stated != data.len() as u64
            {
                return Err(damaged(&format!(
                    "its zstd stream inflates to {} bytes, index.json says chunk_bytes {stated}",
                    data.len()
                )));
            }
            data
        } else {
            let mut data = Vec::new();
            file.take(crate::litdata::format::MAX_CHUNK + 1)
                .read_to_end(&mut data)
                .map_err(|e| self.bad(i, format!("cannot be read: {e}")))?;
            match wrap {
                Wrap::Batch => unframe(&data).map_err(|e| damaged(&e))?,
                Wrap::Sample => unsample(&data).map_err(|e| damaged(&e))?,
                Wrap::None | Wrap::Chunk => data,
            }
        };
        let offsets = chunk::offsets(&data)
            .map_err(|e| self.bad(i, format!("is a damaged LitData chunk: {e}")))?;
        let items = offsets.len() as u64 - 1;
        if items != chunk.items {
            return Err(self.bad(
                i,
                format!("holds {items} items, index.json says {}", chunk.items),
            ));
        }
        if items > 0 && offsets[0] == offsets[items as usize] && !self.leaves.is_empty() {
            return self.footer_items(i, &data, offsets[items as usize], items);
        }
        Ok(Items::Pytree { data, offsets })
    }

    /// The items of chunk `i` (`data`, its last item ending at `last`) from its Arrow
    /// footer; every leaf's column must be of the type its serializer stores.
    fn footer_items(&self, i: usize, data: &[u8], last: u64, items: u64) -> Result<Items> {
        let damaged =
            |e: &dyn std::fmt::Display| self.bad(i, format!("is a damaged LitData chunk: {e}"));
        let range = chunk::footer(data, last)
            .map_err(|e| damaged(&e))?
            .ok_or_else(|| damaged(&"its items are empty and it has no Arrow footer"))?;
        let batches = footer::read(&data[range]).map_err(|e| damaged(&e))?;
        let names: Vec<&str> = self.leaves.iter().map(|l| l.name.as_str()).collect();
        let rows = FooterRows::new(&batches, &names, items).map_err(|e| damaged(&e))?;
        for (l, leaf) in self.leaves.iter().enumerate() {
            let Some(data_type) = rows.data_type(l) else {
                continue;
            };
            let fits = match leaf.kind {
                Kind::Int => *data_type == DataType::Int64,
                Kind::Float => *data_type == DataType::Float64,
                Kind::Bool => *data_type == DataType::Boolean,
                Kind::Pass { text: true, .. } => matches!(
                    data_type,
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ),
                Kind::Pass { text: false, .. } => matches!(
                    data_type,
                    DataType::Binary | DataType::LargeBinary | DataType::BinaryView
                ),
                Kind::Json => nested::is_nested(data_type),
                _ => false,
            };
            if !fits {
                return Err(damaged(&format!(
                    "its Arrow footer holds leaf `{}` ({}) as Arrow {data_type}",
                    leaf.name, leaf.format
                )));
            }
        }
        Ok(Items::Footer(rows))
    }

    /// The leaf values of item `local` of chunk `i`; `None` for a null in its footer.
    pub(super) fn item<'d>(
        &self,
        i: usize,
        items: &'d Items,
        local: u64,
    ) -> Result<Vec<Option<Cow<'d, [u8]>>>> {
        match items {
            Items::Pytree { data, offsets } => {
                let (start, end) = (
                    offsets[local as usize] as usize,
                    offsets[local as usize + 1] as usize,
                );
                let values = chunk::split_item(&data[start..end], self.leaves.len(), local)
                    .map_err(|e| self.bad(i, format!("is a damaged LitData chunk: {e}")))?;
                Ok(values.into_iter().map(|v| Some(Cow::Borrowed(v))).collect())
            }
            Items::Footer(rows) => Ok((0..self.leaves.len())
                .map(|l| rows.stored(l, local).map(Cow::Owned))
                .collect()),
        }
    }

    /// The field a leaf's value is given as; `Err(Ok(reason))` leaves the item out.
    pub(super) fn convert<'v>(
        &self,
        i: usize,
        local: u64,
        leaf: &Leaf,
        value: &'v [u8],
    ) -> Result<std::result::Result<std::borrow::Cow<'v, [u8]>, String>> {
        match leaf.kind.convert(value) {
            Ok(v) => Ok(Ok(v)),
            Err(Problem::Unsupported(why)) => Ok(Err(format!("leaf `{}` {why}", leaf.field))),
            Err(Problem::Corrupt(why)) => Err(self.bad(
                i,
                format!(
                    "is a damaged LitData chunk: item {local} leaf `{}` ({}) {why}",
                    leaf.field, leaf.format
                ),
            )),
        }
    }

    /// Lists the items of chunk `i` into `listing`.
    pub(super) fn list_chunk(&self, i: usize, listing: &mut SampleListing) -> Result<()> {
        let chunk = &self.chunks[i];
        if chunk.items == 0 {
            return Ok(());
        }
        let items = self.load_chunk(i)?;
        'items: for local in 0..chunk.items {
            let values = self.item(i, &items, local)?;
            let global = chunk.first + local;
            let mut fields = Vec::with_capacity(self.leaves.len());
            for (l, (leaf, value)) in self.leaves.iter().zip(&values).enumerate() {
                let Some(value) = value else {
                    continue;
                };
                if Some(l) == self.key {
                    continue;
                }
                match self.convert(i, local, leaf, value)? {
                    Ok(v) => fields.push(FieldSpec::new(&leaf.field, v.len() as u64)),
                    Err(reason) => {
                        listing.skipped.push(Skipped {
                            path: format!("{}#item={local}", chunk.rel),
                            reason,
                        });
                        continue 'items;
                    }
                }
            }
            fields.sort_by(|a, b| a.ext.cmp(&b.ext));
            let key = match self.key {
                Some(k) => {
                    let value = values[k].as_deref().ok_or_else(|| {
                        self.bad(
                            i,
                            format!("item {local} has no `__key__` in its Arrow footer"),
                        )
                    })?;
                    let text = std::str::from_utf8(value).map_err(|_| {
                        self.bad(i, format!("item {local} has a `__key__` that is not UTF-8"))
                    })?;
                    self.key_prefix.apply(&chunk.rel, text)
                }
                None => format!("{global:09}"),
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

/// The items of one chunk, as stored: pytree items, or the rows of its Arrow footer.
pub(super) enum Items {
    /// The chunk's bytes and item offsets.
    Pytree { data: Vec<u8>, offsets: Vec<u64> },
    /// The leaves' values from the footer.
    Footer(FooterRows),
}
