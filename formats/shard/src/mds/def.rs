//! MDS in the format registry: options, defaults and how its shards are told.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Finding, Inspection, Inspector, Manifest};
use shardsmith_store::InputSource;

use super::codec::MdsCompression;
use super::codec::parse_hashes;
use super::index_check::check_indices;
use super::input::{INDEX, MdsDataset, is_mds_input};
use super::inspect::MdsInspector;
use super::layout::MAX_SHARD;
use super::{Mds, MdsOptions};
use crate::columns::Encoding;
use crate::definition::{Configured, FormatDef, FormatOptions, InputSpec, OptionName};
use crate::sample::{SampleSource, SampleSpec};
use crate::{Error, Result, ShardFormat};

/// The registry entry of MDS.
pub struct Def;

/// The registry entry of MDS.
pub static MDS: Def = Def;

/// MDS options checked for a dataset, before its samples are known.
#[derive(Debug)]
struct Checked {
    options: MdsOptions,
    key_column: String,
    size_limit: u64,
}

impl FormatDef for Def {
    fn name(&self) -> &'static str {
        "mds"
    }

    fn dataset_files(
        &self,
        state: &serde_json::Value,
        shards: &[(&str, &serde_json::Value)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        super::index_files(state, shards)
    }

    fn summary(&self) -> &'static str {
        "MosaicML Streaming shards (shard.NNNNN.mds[.EXT] + index.json), read by StreamingDataset"
    }

    fn title(&self) -> &'static str {
        "MDS"
    }

    fn input_summary(&self) -> &'static str {
        "A MosaicML Streaming dataset: index.json (merged indices too) and its shards, any compression"
    }

    fn is_input(&self, source: &dyn InputSource, only: Option<&str>) -> bool {
        is_mds_input(source, only)
    }

    fn has_root_index(&self) -> bool {
        true
    }

    /// The dataset is read through its `index.json` (samples in index order), so the
    /// input names its directory or that file, never one shard.
    fn open_input(
        &self,
        source: Arc<dyn InputSource>,
        spec: &InputSpec<'_>,
    ) -> Result<Box<dyn SampleSource>> {
        let not_mds = |reason: &str| Error::BadInput {
            path: spec.shown.to_string(),
            reason: reason.to_string(),
        };
        if spec.only.is_some_and(|rel| rel != INDEX) {
            return Err(not_mds(
                "is one file of an MDS dataset, which is read from its directory (or its index.json), not from one shard",
            ));
        }
        let opened = MdsDataset::open(
            source.clone(),
            spec.shown,
            spec.key_column,
            spec.scratch.clone(),
        );
        // Why an index cannot be read matters less than that there is none of streaming's
        // format (asked only then: the index is not read twice).
        let dataset = match opened {
            Err(_) if !is_mds_input(source.as_ref(), spec.only) => {
                return Err(not_mds(
                    "is not an MDS dataset: it has no index.json of streaming's format (version 2, mds shards)",
                ));
            }
            opened => opened?.with_key_prefix(spec.key_prefix),
        };
        Ok(match spec.shard {
            Some(rel) => Box::new(dataset.only_shards(&BTreeSet::from([rel.to_string()]))),
            None => Box::new(dataset),
        })
    }

    /// MDSWriter's own default `size_limit` is 64 MiB (`1 << 26`).
    fn default_shard_size(&self) -> u64 {
        64 << 20
    }

    fn takes(&self) -> &'static [OptionName] {
        &[OptionName::Column, OptionName::Hashes]
    }

    fn refuse_prefix(&self, prefix: &str) -> Option<String> {
        (prefix != "shard").then(|| {
            "--prefix does not apply to --format mds: MDS shard names are fixed (shard.00000.mds)"
                .into()
        })
    }

    fn configure(&self, options: &FormatOptions, shard_size: u64) -> Result<Arc<dyn Configured>> {
        if shard_size > MAX_SHARD {
            return Err(Error::Setting(format!(
                "MDS shards are at most {MAX_SHARD} bytes (32-bit offsets); --shard-size {shard_size} is too large"
            )));
        }
        let compression = match &options.compression {
            Some(text) => MdsCompression::parse(text)
                .map_err(|e| Error::Setting(format!("--compression: {e}")))?,
            None => None,
        };
        let hashes = parse_hashes(options.hashes.as_deref().unwrap_or("xxh64"))
            .map_err(|e| Error::Setting(format!("--hashes: {e}")))?;
        Ok(Arc::new(Checked {
            options: MdsOptions {
                compression,
                hashes,
            },
            key_column: options.key_column.clone(),
            size_limit: shard_size,
        }))
    }

    /// MDS shard names are fixed: `shard.NNNNN.mds`, compressed `shard.NNNNN.mds.EXT`.
    fn sniff_name(&self, path: &str) -> bool {
        let base = path.rsplit('/').next().unwrap_or(path);
        base.starts_with("shard.") && (base.ends_with(".mds") || base.contains(".mds."))
    }

    fn inspector(&self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        Box::new(MdsInspector::new(ctx.path))
    }

    /// Every `index.json` against the shards it lists.
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
    fn build(
        &self,
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>> {
        Ok(Box::new(Mds::new(
            &self.options,
            columns,
            &self.key_column,
            self.size_limit,
            samples,
        )?))
    }
}
