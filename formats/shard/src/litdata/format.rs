//! [`Litdata`], the [`ShardFormat`] of LitData chunks: one `str` or `bytes` leaf per
//! field after the key, the samples it cannot hold, an encoder per chunk and the
//! dataset's `index.json`.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde_json::{Value, json};

use super::chunk;
use super::index::index_files;
use super::spec::{self, KEY};
use crate::columns::{Encoding, ValueError};
use crate::format::{
    BadValue, DatasetFile, DatasetFilesError, Field, Payload, ShardEncoder, ShardFormat, ShardOut,
};
use crate::sample::SampleSpec;
use crate::{Error, Result};

/// Largest chunk: offsets are `u32`.
pub const MAX_CHUNK: u64 = u32::MAX as u64;

/// True when a field of `encoding` is stored with LitData's `str` serializer (read back
/// as a Python `str`); every other field is `bytes`.
pub fn is_text(encoding: &Encoding) -> bool {
    matches!(
        encoding,
        Encoding::Str
            | Encoding::Json
            | Encoding::StrInt
            | Encoding::StrFloat
            | Encoding::StrDecimal
    )
}

/// True when LitData can hold a field of `encoding` (as `str` or `bytes`).
pub fn stores(encoding: &Encoding) -> bool {
    is_text(encoding) || matches!(encoding, Encoding::Bytes | Encoding::Jpeg | Encoding::Png)
}

/// One field of the dataset.
#[derive(Debug)]
struct Leaf {
    name: String,
    encoding: Encoding,
}

/// The LitData format configured for one dataset.
pub struct Litdata {
    leaves: Vec<Leaf>,
    /// The writer's `config` (the `config` of `index.json`).
    config: Value,
}

impl Litdata {
    /// Configures LitData for `samples`: the key, then one leaf per field any sample has,
    /// in name order; `columns` are the encodings by field name (the user's first).
    pub fn new(
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
        user: &BTreeMap<String, Encoding>,
        chunk_bytes: u64,
    ) -> Result<Self> {
        let fields = crate::sample::field_names(samples);
        if fields.contains(KEY) {
            return Err(Error::Setting(format!(
                "a field is named `{KEY}`, which LitData items hold the sample key under"
            )));
        }
        for (name, encoding) in user {
            if !fields.contains(name.as_str()) {
                let known: Vec<&str> = fields.iter().copied().collect();
                return Err(Error::Setting(format!(
                    "--column `{name}`: no sample has that field (fields: {})",
                    known.join(", ")
                )));
            }
            if !stores(encoding) {
                return Err(Error::Setting(format!(
                    "--column `{name}:{encoding}`: LitData fields are `str` or `bytes` (text encodings are `str`, the others `bytes`)"
                )));
            }
        }
        let leaves: Vec<Leaf> = fields
            .iter()
            .map(|name| Leaf {
                name: (*name).to_string(),
                encoding: columns
                    .get(*name)
                    .filter(|e| stores(e))
                    .cloned()
                    .unwrap_or_else(|| Encoding::for_field(name)),
            })
            .collect();
        let mut names = vec![KEY];
        names.extend(leaves.iter().map(|l| l.name.as_str()));
        let mut formats = vec!["str"];
        formats.extend(
            leaves
                .iter()
                .map(|l| if is_text(&l.encoding) { "str" } else { "bytes" }),
        );
        let config = json!({
            "chunk_bytes": chunk_bytes,
            "chunk_size": null,
            "compression": null,
            "data_format": formats,
            "data_spec": spec::dict_spec(&names),
            "encryption": null,
            "item_loader": "PyTreeLoader",
        });
        Ok(Self { leaves, config })
    }

    fn leaf(&self, field: &str) -> Option<&Leaf> {
        self.leaves.iter().find(|l| l.name == field)
    }
}

impl ShardFormat for Litdata {
    fn name(&self) -> &'static str {
        "litdata"
    }

    /// `chunk-{rank}-{index}.bin`, as one `optimize` worker (rank 0) names its chunks.
    fn shard_name(&self, _prefix: &str, index: usize) -> String {
        format!("chunk-0-{index}.bin")
    }

    fn refuse(&self, sample: &SampleSpec) -> Option<String> {
        let missing: Vec<&str> = self
            .leaves
            .iter()
            .filter(|l| !sample.fields.iter().any(|f| *f.ext == l.name))
            .map(|l| l.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Some(format!(
                "sample `{}` has no `{}` field: LitData items of a dataset have the same fields (one data_format) and cannot hold a missing value; pack only fields every sample has with --fields",
                sample.key,
                missing.join("`, `")
            ));
        }
        if self.sample_bytes(sample) + self.shard_overhead() > MAX_CHUNK {
            return Some(format!(
                "sample `{}` does not fit in a 4 GiB LitData chunk (32-bit offsets)",
                sample.key
            ));
        }
        None
    }

    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        let leaves = 1 + sample.fields.len() as u64;
        4 + 4 * leaves
            + sample.key.len() as u64
            + sample.fields.iter().map(|f| f.encoded).sum::<u64>()
    }

    /// The item count and the first offset.
    fn shard_overhead(&self) -> u64 {
        chunk::header_len(0)
    }

    fn check_values(&self, sample: &SampleSpec, values: &[&[u8]]) -> Result<(), BadValue> {
        for (field, value) in sample.fields.iter().zip(values) {
            if let Some(leaf) = self.leaf(&field.ext) {
                leaf.encoding
                    .encode(value)
                    .map_err(|e| BadValue::new(&field.ext, e, Some(&leaf.encoding)))?;
            }
        }
        Ok(())
    }

    fn options(&self) -> BTreeMap<String, Value> {
        let columns: serde_json::Map<String, Value> = self
            .leaves
            .iter()
            .map(|l| {
                let kind = if is_text(&l.encoding) { "str" } else { "bytes" };
                (l.name.clone(), Value::from(kind))
            })
            .collect();
        BTreeMap::from([("fields".to_string(), Value::Object(columns))])
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        Box::new(ChunkEncoder {
            text: self.leaves.iter().map(|l| l.encoding.clone()).collect(),
            items: Vec::new(),
            sizes: Vec::new(),
        })
    }

    fn dataset_files(
        &self,
        shards: &[(&str, &Value)],
    ) -> Result<Vec<DatasetFile>, DatasetFilesError> {
        index_files(&self.config, shards)
    }

    fn dataset_state(&self) -> Value {
        self.config.clone()
    }
}

/// Builds one chunk in memory: items as they come, the header at the end.
struct ChunkEncoder {
    text: Vec<Encoding>,
    items: Vec<u8>,
    sizes: Vec<u64>,
}

impl ShardEncoder for ChunkEncoder {
    fn add(&mut self, _out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()> {
        let start = self.items.len();
        if fields.len() != self.text.len() {
            return Err(io::Error::other(format!(
                "sample `{key}` has {} fields, the dataset {}",
                fields.len(),
                self.text.len()
            )));
        }
        self.items
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        for field in fields.iter() {
            let size = u32::try_from(field.size).map_err(|_| {
                io::Error::other(format!(
                    "sample `{key}` field `{}` exceeds 4 GiB",
                    field.ext
                ))
            })?;
            self.items.extend_from_slice(&size.to_le_bytes());
        }
        self.items.extend_from_slice(key.as_bytes());
        for (field, encoding) in fields.iter_mut().zip(&self.text) {
            let from = self.items.len();
            match &mut field.payload {
                Payload::Bytes(bytes) => self.items.extend_from_slice(bytes),
                Payload::Stream(reader) => {
                    reader.take(field.size).read_to_end(&mut self.items)?;
                }
            }
            let value = &self.items[from..];
            if value.len() as u64 != field.size {
                return Err(io::Error::other(format!(
                    "sample `{key}` field `{}` gave {} bytes, not {}",
                    field.ext,
                    value.len(),
                    field.size
                )));
            }
            encoding.encode(value).map_err(|e: ValueError| {
                io::Error::other(format!("sample `{key}` field `{}` {e}", field.ext))
            })?;
        }
        self.sizes.push((self.items.len() - start) as u64);
        Ok(())
    }

    fn finish(&mut self, out: &mut ShardOut) -> io::Result<Value> {
        let header = chunk::header(self.sizes.iter().copied());
        let bytes = header.len() + self.items.len();
        if bytes as u64 > MAX_CHUNK {
            return Err(io::Error::other(
                "a LitData chunk reached 4 GiB (32-bit offsets)",
            ));
        }
        out.write_all(&header)?;
        out.write_all(&self.items)?;
        let facts = json!({"chunk_bytes": bytes, "chunk_size": self.sizes.len()});
        self.items.clear();
        self.sizes.clear();
        Ok(facts)
    }
}
