//! [`Hf`], the [`ShardFormat`] of Hugging Face `save_to_disk` directories: Arrow IPC
//! stream shards `data-NNNNN.arrow`, then `dataset_info.json` and `state.json`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::dataset::dataset_files;
use super::encode::HfEncoder;
use super::layout::{BATCH_BYTES, BATCH_ROWS, Layout};
use crate::Result;
use crate::columns::Encoding;
use crate::format::{BadValue, DatasetFile, DatasetFilesError, ShardEncoder, ShardFormat};
use crate::sample::SampleSpec;

/// The Hugging Face format configured for one dataset.
pub struct Hf {
    pub(super) layout: Arc<Layout>,
}

impl Hf {
    /// Configures the format for `samples`: the key column, then one column per field
    /// any sample has, in name order.
    pub fn new(
        key_column: &str,
        overrides: &BTreeMap<String, Encoding>,
        samples: &[SampleSpec],
    ) -> Result<Self> {
        Ok(Self {
            layout: Arc::new(Layout::new(key_column, overrides, samples)?),
        })
    }
}

/// The name of shard `index`: `data-00000.arrow`. `save_to_disk` names its shards
/// `data-00000-of-00003.arrow`, but the count is not known while shards are written
/// (nor in a run split into tasks); `load_from_disk` opens the files `state.json`
/// lists, whatever their names.
pub(super) fn shard_name(index: usize) -> String {
    format!("data-{index:05}.arrow")
}

impl ShardFormat for Hf {
    fn name(&self) -> &'static str {
        "hf"
    }

    fn shard_name(&self, _prefix: &str, index: usize) -> String {
        shard_name(index)
    }

    fn refuse(&self, _sample: &SampleSpec) -> Option<String> {
        None
    }

    /// The row's bytes in the batch's buffers, plus its share of the batches it may
    /// cause: a batch is cut every [`BATCH_ROWS`] rows or once its rows hold
    /// [`BATCH_BYTES`] bytes, so a shard has at most one batch more than these shares
    /// pay for (counted in [`ShardFormat::shard_overhead`]).
    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        let row = self.layout.row_bytes(sample);
        let per_batch = self.layout.per_batch;
        row + per_batch.div_ceil(BATCH_ROWS as u64) + (row * per_batch).div_ceil(BATCH_BYTES)
    }

    fn shard_overhead(&self) -> u64 {
        self.layout.fixed + self.layout.per_batch
    }

    fn check_values(&self, sample: &SampleSpec, values: &[&[u8]]) -> Result<(), BadValue> {
        for (field, value) in sample.fields.iter().zip(values) {
            if let Some(i) = self
                .layout
                .schema
                .fields()
                .iter()
                .position(|c| c.name() == &*field.ext)
            {
                let encoding = &self.layout.encodings[i];
                encoding
                    .encode(value)
                    .map_err(|e| BadValue::new(&field.ext, e, Some(encoding)))?;
            }
        }
        Ok(())
    }

    fn options(&self) -> BTreeMap<String, Value> {
        let columns: serde_json::Map<String, Value> = self
            .layout
            .schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), Value::from(f.data_type().to_string())))
            .collect();
        BTreeMap::from([("columns".to_string(), Value::Object(columns))])
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        Box::new(HfEncoder::new(self.layout.clone()))
    }

    fn dataset_files(
        &self,
        shards: &[(&str, &Value)],
    ) -> Result<Vec<DatasetFile>, DatasetFilesError> {
        dataset_files(&self.dataset_state(), shards)
    }

    fn dataset_state(&self) -> Value {
        json!({"features": self.layout.features})
    }
}
