//! [`Mds`], the [`ShardFormat`] of MDS shards, configured by [`MdsOptions`]: columns from
//! the samples' fields, sizes, the samples it cannot hold, and an encoder per shard.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::codec::MdsCompression;
use super::encode::{MdsEncoder, StreamingEncoder};
use super::index_file::index_files;
use super::layout::MAX_SHARD;
use super::layout::{Column, Layout};
use super::pyjson;
use crate::columns::{Encoding, ValueError};
use crate::format::{BadValue, DatasetFile, DatasetFilesError, ShardEncoder, ShardFormat};
use crate::sample::SampleSpec;
use crate::{Error, Result};

/// Options of the MDS format.
#[derive(Clone, Debug, Default)]
pub struct MdsOptions {
    /// Compression of the shard files.
    pub compression: Option<MdsCompression>,
    /// Hash algorithms recorded in `index.json` (sorted, unique).
    pub hashes: Vec<String>,
}

/// The MDS format configured for one dataset.
pub struct Mds {
    layout: Arc<Layout>,
}

impl Mds {
    /// Configures MDS for `samples`: one column per field any sample has, plus the key.
    pub fn new(
        options: &MdsOptions,
        overrides: &BTreeMap<String, Encoding>,
        key_column: &str,
        size_limit: u64,
        samples: &[SampleSpec],
    ) -> Result<Self> {
        if size_limit > MAX_SHARD {
            return Err(Error::Setting(format!(
                "MDS shards are at most {MAX_SHARD} bytes (32-bit offsets); --shard-size {size_limit} is too large"
            )));
        }
        let fields = crate::sample::field_names(samples);
        if fields.contains(key_column) {
            return Err(Error::Setting(format!(
                "a field is named `{key_column}`, which is the key column; name the key column differently with --key-column"
            )));
        }
        for name in overrides.keys() {
            if !fields.contains(name.as_str()) {
                let known: Vec<&str> = fields.iter().copied().collect();
                return Err(Error::Setting(format!(
                    "--column `{name}`: no sample has that field (fields: {})",
                    known.join(", ")
                )));
            }
        }
        let mut columns: Vec<Column> = fields
            .iter()
            .map(|name| {
                let encoding = overrides
                    .get(*name)
                    .cloned()
                    .unwrap_or_else(|| Encoding::for_field(name));
                Column {
                    name: (*name).to_string(),
                    fixed: encoding.fixed_size(),
                    encoding,
                    is_key: false,
                }
            })
            .collect();
        columns.push(Column {
            name: key_column.to_string(),
            encoding: Encoding::Str,
            fixed: None,
            is_key: true,
        });
        columns.sort_by(|a, b| a.name.cmp(&b.name));
        let config = json!({
            "column_encodings": columns.iter().map(|c| c.encoding.to_string()).collect::<Vec<_>>(),
            "column_names": columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
            "column_sizes": columns.iter().map(|c| c.fixed).collect::<Vec<_>>(),
            "compression": options.compression.map(|c| c.name()),
            "format": "mds",
            "hashes": options.hashes,
            "size_limit": size_limit,
            "version": 2,
        });
        let config_json = pyjson::dumps(&config);
        Ok(Self {
            layout: Arc::new(Layout {
                columns,
                size_limit,
                buffers: std::sync::Mutex::new(Vec::new()),
                compression: options.compression,
                hashes: options.hashes.clone(),
                config,
                config_json,
            }),
        })
    }

    pub(super) fn column(&self, field: &str) -> Option<&Column> {
        self.layout
            .columns
            .iter()
            .find(|c| !c.is_key && c.name == field)
    }
}

impl ShardFormat for Mds {
    fn name(&self) -> &'static str {
        "mds"
    }

    fn shard_name(&self, _prefix: &str, index: usize) -> String {
        match self.layout.compression {
            Some(c) => format!("shard.{index:05}.mds.{}", c.family.name()),
            None => format!("shard.{index:05}.mds"),
        }
    }

    fn refuse(&self, sample: &SampleSpec) -> Option<String> {
        let missing: Vec<&str> = self
            .layout
            .columns
            .iter()
            .filter(|c| !c.is_key && !sample.fields.iter().any(|f| *f.ext == c.name))
            .map(|c| c.name.as_str())
            .collect();
        if !missing.is_empty() {
            let has: Vec<&str> = self
                .layout
                .columns
                .iter()
                .filter(|c| !c.is_key && sample.fields.iter().any(|f| *f.ext == c.name))
                .map(|c| c.name.as_str())
                .collect();
            let hint = if has.is_empty() {
                String::new()
            } else {
                format!(
                    "; to keep such samples, pack only fields every sample has, e.g. `--fields {}`",
                    has.join(",")
                )
            };
            return Some(format!(
                "sample `{}` has no `{}` field: MDS columns are the same for every sample and cannot hold a missing value{hint}",
                sample.key,
                missing.join("`, `")
            ));
        }
        if self.sample_bytes(sample) + self.shard_overhead() > MAX_SHARD {
            return Some(format!(
                "sample `{}` does not fit in a 4 GiB MDS shard (32-bit offsets)",
                sample.key
            ));
        }
        None
    }

    fn peek_len(&self, ext: &str) -> usize {
        self.column(ext).map_or(0, |c| c.encoding.peek_len())
    }

    fn encoded_len(&self, ext: &str, size: u64, head: &[u8]) -> Result<u64, ValueError> {
        match self.column(ext) {
            Some(c) => c.encoding.encoded_len(size, head),
            None => Ok(size),
        }
    }

    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        let mut bytes = 4 + 4 + sample.key.len() as u64;
        for field in &sample.fields {
            bytes += match self.column(&field.ext).and_then(|c| c.fixed) {
                Some(fixed) => fixed,
                None => 4 + field.encoded,
            };
        }
        bytes
    }

    fn shard_overhead(&self) -> u64 {
        4 + 4 + self.layout.config_json.len() as u64
    }

    fn check_values(&self, sample: &SampleSpec, values: &[&[u8]]) -> Result<(), BadValue> {
        for (field, value) in sample.fields.iter().zip(values) {
            if let Some(column) = self.column(&field.ext) {
                column
                    .encoding
                    .encode(value)
                    .map_err(|e| BadValue::new(&field.ext, e, Some(&column.encoding)))?;
            }
        }
        Ok(())
    }

    fn options(&self) -> BTreeMap<String, Value> {
        let mut options = BTreeMap::new();
        let columns: serde_json::Map<String, Value> = self
            .layout
            .columns
            .iter()
            .map(|c| (c.name.clone(), Value::from(c.encoding.to_string())))
            .collect();
        options.insert("columns".into(), Value::Object(columns));
        options.insert(
            "compression".into(),
            self.layout
                .compression
                .map_or(Value::Null, |c| Value::from(c.name())),
        );
        options.insert("hashes".into(), Value::from(self.layout.hashes.clone()));
        options
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        let records = self
            .layout
            .buffers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .unwrap_or_default();
        Box::new(MdsEncoder {
            layout: self.layout.clone(),
            records,
            ends: Vec::new(),
        })
    }

    fn planned_encoder(&self, planned: &[SampleSpec]) -> Box<dyn ShardEncoder> {
        // Compressed shards are compressed whole (for byte-identity with MDSWriter), so
        // only uncompressed ones can stream.
        if self.layout.compression.is_some() {
            return self.encoder();
        }
        let records: Vec<(String, u64)> = planned
            .iter()
            .map(|s| (s.key.clone(), self.sample_bytes(s) - 4))
            .collect();
        Box::new(StreamingEncoder {
            layout: self.layout.clone(),
            planned: records,
            next: 0,
            hasher: None,
            record: Vec::new(),
        })
    }

    fn dataset_files(
        &self,
        shards: &[(&str, &Value)],
    ) -> Result<Vec<DatasetFile>, DatasetFilesError> {
        index_files(&self.layout.config, shards)
    }

    fn dataset_state(&self) -> Value {
        self.layout.config.clone()
    }
}
