//! [`WebDataset`], the [`ShardFormat`] of tar shards: names, sizes, which samples a tar
//! cannot hold, and an encoder per shard.

use std::collections::BTreeMap;

use super::compress::TarCompression;
use super::encode::{Indexing, TarEncoder, padded};
use super::readers::IndexKinds;
use super::ustar::{BLOCK, MAX_MEMBER, MAX_NAME};
use crate::format::{DatasetBuilder, DatasetFile, DatasetFilesError, ShardEncoder, ShardFormat};
use crate::sample::SampleSpec;

/// The WebDataset format: plain or compressed tar shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebDataset {
    /// Compression of whole shards (`None`: plain `.tar`).
    pub compression: Option<TarCompression>,
    /// The readers' indexes written beside the shards (`--index`).
    pub index: IndexKinds,
}

impl WebDataset {
    /// Plain `.tar` shards.
    pub const PLAIN: WebDataset = WebDataset {
        compression: None,
        index: IndexKinds {
            wids: false,
            dali: false,
            energon: false,
        },
    };
}

impl ShardFormat for WebDataset {
    fn name(&self) -> &'static str {
        "webdataset"
    }

    fn shard_name(&self, prefix: &str, index: usize) -> String {
        let ext = self.compression.map_or("tar", |c| c.extension());
        format!("{prefix}-{index:06}.{ext}")
    }

    fn refuse(&self, sample: &SampleSpec) -> Option<String> {
        // Keys from a file tree are valid by construction; keys from other sources (a
        // Parquet key column) must split back the same way when readers read `key.field`.
        match crate::naming::split_key(&format!("{}.x", sample.key)) {
            Ok((key, _)) if key == sample.key && !sample.key.split('/').any(str::is_empty) => {}
            _ => {
                return Some(format!(
                    "key `{}` would be read back differently (a dot in its last part, an empty part, a leading dot or a `__x__` part)",
                    sample.key
                ));
            }
        }
        for field in &sample.fields {
            if self.index.dali
                && let Some(c) = format!("{}.{}", sample.key, field.ext)
                    .chars()
                    .find(|c| c.is_whitespace())
            {
                return Some(format!(
                    "member name `{}.{}` holds {c:?}: DALI's index lists members separated by spaces and cannot name it (--index dali)",
                    sample.key, field.ext
                ));
            }
            let name_len = sample.key.len() + 1 + field.ext.len();
            if name_len > MAX_NAME {
                return Some(format!(
                    "member name `{}.{}` is {name_len} bytes: wids reads only the 100-byte ustar name field and would mis-key it; shorten the path",
                    sample.key, field.ext
                ));
            }
            if field.size > MAX_MEMBER {
                return Some(format!(
                    "field `{}` is {} bytes: a ustar member holds at most 8 GiB without extensions wids cannot read",
                    field.ext, field.size
                ));
            }
        }
        None
    }

    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        sample.fields.iter().map(|f| BLOCK + padded(f.size)).sum()
    }

    fn shard_overhead(&self) -> u64 {
        2 * BLOCK
    }

    /// Only a compressed dataset records its compression: plain datasets keep the
    /// manifest (and root digest) they had before compression existed.
    fn options(&self) -> BTreeMap<String, serde_json::Value> {
        let mut options = BTreeMap::new();
        if let Some(compression) = self.compression {
            options.insert("compression".into(), compression.name().into());
        }
        if self.index.any() {
            options.insert("index".into(), serde_json::json!(self.index.names()));
        }
        options
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        Box::new(TarEncoder {
            compression: self.compression,
            compressor: None,
            index: self.index.any().then(|| Indexing {
                listing: self.index.needs_listing().then(String::new),
                ..Indexing::default()
            }),
        })
    }

    fn dataset_files(
        &self,
        shards: &[(&str, &serde_json::Value)],
    ) -> Result<Vec<DatasetFile>, DatasetFilesError> {
        super::readers::index_files(&self.dataset_state(), shards)
    }

    /// The readers' indexes, built as each shard is committed (in plan order).
    fn dataset_builder(&self) -> Option<Box<dyn DatasetBuilder>> {
        if !self.index.any() {
            return None;
        }
        // A temporary file that cannot be made is reported by `dataset_files` at the end.
        super::readers::FactsBuilder::new(self.index)
            .ok()
            .map(|b| Box::new(b) as Box<dyn DatasetBuilder>)
    }

    /// The indexes asked for (`{"index": ["wids", "dali"]}`), or nothing.
    fn dataset_state(&self) -> serde_json::Value {
        if self.index.any() {
            serde_json::json!({"index": self.index.names()})
        } else {
            serde_json::Value::Null
        }
    }
}
