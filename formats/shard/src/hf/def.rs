//! Hugging Face `save_to_disk` directories in the format registry: options, defaults,
//! how their files are told, and their dataset files.

use std::collections::BTreeMap;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Inspector};
use shardsmith_store::InputSource;

use super::Hf;
use super::dataset::{INFO, STATE};
use super::input::{HfRows, is_hf_input, key_column};
use super::inspect::HfInspector;
use super::layout::hf_kind;
use crate::columns::Encoding;
use crate::definition::{Configured, FormatDef, FormatOptions, InputSpec, OptionName};
use crate::format::{DatasetFile, DatasetFilesError};
use crate::sample::{SampleSource, SampleSpec};
use crate::{Error, Result, ShardFormat};

/// The registry entry of the Hugging Face format.
pub struct Def;

/// The registry entry of the Hugging Face format.
pub static HF: Def = Def;

/// Options checked for a dataset, before its samples are known.
#[derive(Debug)]
struct Checked {
    key_column: String,
}

impl FormatDef for Def {
    fn name(&self) -> &'static str {
        "hf"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["huggingface"]
    }

    fn summary(&self) -> &'static str {
        "Hugging Face datasets save_to_disk directories (data-NNNNN.arrow + state.json, dataset_info.json), read by load_from_disk"
    }

    fn title(&self) -> &'static str {
        "Hugging Face"
    }

    fn input_summary(&self) -> &'static str {
        "A Hugging Face save_to_disk directory: the Arrow files its state.json lists, every row a sample"
    }

    fn is_input(&self, source: &dyn InputSource, only: Option<&str>) -> bool {
        is_hf_input(source, only)
    }

    /// Record batches are built and freed batch after batch.
    fn buffers(&self) -> crate::definition::Buffers {
        crate::definition::Buffers::Batches
    }
    fn has_root_index(&self) -> bool {
        true
    }

    /// The dataset is read through its `state.json`, so the input names its directory
    /// (or `state.json`, `dataset_info.json`), never one Arrow file.
    fn open_input(
        &self,
        source: Arc<dyn InputSource>,
        spec: &InputSpec<'_>,
    ) -> Result<Box<dyn SampleSource>> {
        if spec.only.is_some_and(|rel| rel != STATE && rel != INFO) {
            return Err(Error::BadInput {
                path: spec.shown.to_string(),
                reason: "is one file of a Hugging Face dataset, which is read from its directory (or its state.json), not from one Arrow file".into(),
            });
        }
        let rows = HfRows::open(source, spec.shown, spec.shard, spec.key_column)?;
        Ok(Box::new(rows.with_key_prefix(spec.key_prefix)))
    }

    /// `save_to_disk`'s own default `max_shard_size` ("500MB").
    fn default_shard_size(&self) -> u64 {
        500_000_000
    }

    fn takes(&self) -> &'static [OptionName] {
        &[OptionName::Column]
    }

    fn refuse_prefix(&self, prefix: &str) -> Option<String> {
        (prefix != "shard").then(|| {
            "--prefix does not apply to --format hf: its shard names are fixed (data-00000.arrow)"
                .into()
        })
    }

    fn configure(&self, options: &FormatOptions, _shard_size: u64) -> Result<Arc<dyn Configured>> {
        if options.compression.is_some() {
            return Err(Error::Setting(
                "--compression does not apply to --format hf: save_to_disk's Arrow files are uncompressed".into(),
            ));
        }
        Ok(Arc::new(Checked {
            key_column: key_column(&options.key_column).to_string(),
        }))
    }

    fn dataset_files(
        &self,
        state: &serde_json::Value,
        shards: &[(&str, &serde_json::Value)],
    ) -> std::result::Result<Vec<DatasetFile>, DatasetFilesError> {
        super::dataset::dataset_files(state, shards)
    }

    fn part_files(&self) -> &'static [&'static str] {
        &[super::dataset::STATE, super::dataset::INFO]
    }

    fn merged_files(
        &self,
        parts: &[(&str, Vec<Vec<u8>>)],
    ) -> std::result::Result<Vec<DatasetFile>, DatasetFilesError> {
        super::dataset::merged_files(parts)
    }

    fn sniff_name(&self, path: &str) -> bool {
        path.ends_with(".arrow")
    }

    fn inspector(&self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        Box::new(HfInspector::new(ctx.path))
    }
}

impl Configured for Checked {
    fn accepts(&self, encoding: &Encoding) -> bool {
        hf_kind(encoding).is_ok()
    }

    fn build(
        &self,
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>> {
        Ok(Box::new(Hf::new(&self.key_column, columns, samples)?))
    }
}
