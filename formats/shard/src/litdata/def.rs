//! LitData in the format registry: options, defaults and how its chunks are told.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Finding, Inspection, Inspector, Manifest};
use shardsmith_store::InputSource;

use super::format::{Litdata, MAX_CHUNK, stores};
use super::index::{INDEX, index_files};
use super::input::{LitdataDataset, is_litdata_input};
use super::inspect::{LitdataInspector, check_indices, is_chunk_name};
use crate::columns::Encoding;
use crate::definition::{Configured, FormatDef, FormatOptions, InputSpec, OptionName};
use crate::sample::{SampleSource, SampleSpec};
use crate::{Error, Result, ShardFormat};

/// The registry entry of LitData.
pub struct Def;

/// The registry entry of LitData.
pub static LITDATA: Def = Def;

/// LitData options checked for a dataset, before its samples are known.
#[derive(Debug)]
struct Checked {
    user: BTreeMap<String, Encoding>,
    chunk_bytes: u64,
}

impl FormatDef for Def {
    fn name(&self) -> &'static str {
        "litdata"
    }

    fn summary(&self) -> &'static str {
        "LitData chunks (chunk-0-N.bin + index.json), as litdata.optimize writes them, read by litdata.StreamingDataset"
    }

    fn title(&self) -> &'static str {
        "LitData"
    }

    fn input_summary(&self) -> &'static str {
        "A LitData dataset (litdata.optimize output): index.json and its uncompressed PyTree chunks"
    }

    fn is_input(&self, source: &dyn InputSource, only: Option<&str>) -> bool {
        is_litdata_input(source, only)
    }

    fn has_root_index(&self) -> bool {
        true
    }

    fn open_input(
        &self,
        source: Arc<dyn InputSource>,
        spec: &InputSpec<'_>,
    ) -> Result<Box<dyn SampleSource>> {
        if spec.only.is_some_and(|rel| rel != INDEX) {
            return Err(Error::BadInput {
                path: spec.shown.to_string(),
                reason: "is one file of a LitData dataset, which is read from its directory (or its index.json), not from one chunk".into(),
            });
        }
        let dataset = LitdataDataset::open(source, spec.shown)?.with_key_prefix(spec.key_prefix);
        Ok(Box::new(match spec.shard {
            Some(rel) => dataset.only_chunk(rel),
            None => dataset,
        }))
    }

    fn dataset_files(
        &self,
        state: &serde_json::Value,
        shards: &[(&str, &serde_json::Value)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        index_files(state, shards)
    }

    fn part_files(&self) -> &'static [&'static str] {
        &[super::index::INDEX]
    }

    fn merged_files(
        &self,
        parts: &[(&str, Vec<Vec<u8>>)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        super::merge::merged_index(parts)
    }

    /// LitData has no default: `optimize` needs `chunk_bytes` or `chunk_size`. Its
    /// documentation and examples use `chunk_bytes="64MB"`, which it reads as 64,000,000
    /// bytes: the same here.
    fn default_shard_size(&self) -> u64 {
        64_000_000
    }

    fn takes(&self) -> &'static [OptionName] {
        &[OptionName::Column]
    }

    fn refuse_prefix(&self, prefix: &str) -> Option<String> {
        (prefix != "shard").then(|| {
            "--prefix does not apply to --format litdata: LitData chunk names are fixed (chunk-0-N.bin)"
                .into()
        })
    }

    fn configure(&self, options: &FormatOptions, shard_size: u64) -> Result<Arc<dyn Configured>> {
        if shard_size > MAX_CHUNK {
            return Err(Error::Setting(format!(
                "LitData chunks are at most {MAX_CHUNK} bytes (32-bit offsets); --shard-size {shard_size} is too large"
            )));
        }
        if options.compression.is_some() {
            return Err(Error::Setting(
                "--compression does not apply to --format litdata: shardsmith writes uncompressed chunks".into(),
            ));
        }
        Ok(Arc::new(Checked {
            user: options.columns.clone(),
            chunk_bytes: shard_size,
        }))
    }

    fn sniff_name(&self, path: &str) -> bool {
        is_chunk_name(path)
    }

    fn inspector(&self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        Box::new(LitdataInspector::new(ctx))
    }

    /// Every LitData `index.json` against the chunks it lists.
    fn check_layout(
        &self,
        root: &Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, Inspection>,
        manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        check_indices(root, files, inspections, manifest)
    }
}

impl Configured for Checked {
    fn accepts(&self, encoding: &Encoding) -> bool {
        stores(encoding)
    }

    fn build(
        &self,
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>> {
        Ok(Box::new(Litdata::new(
            samples,
            columns,
            &self.user,
            self.chunk_bytes,
        )?))
    }
}
