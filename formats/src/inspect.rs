//! Chooses the structural checker for a file: by the format a manifest recorded, by
//! name, or by content (token files: see [`crate::tokens::inspect`]; checkpoint magic
//! bytes, MDS shard names, the Parquet magic, a ustar magic at byte 257; `.tar.gz`,
//! `.tgz` and `.tar.zst` names). Dataset-level checks (an index against its shards, a
//! checkpoint's metadata against its files) run in `check_layout` once every file was
//! read.

use std::collections::BTreeMap;
use std::path::Path;

use shardsmith_manifest::{
    FileContext, Finding, Inspection, Inspector, InspectorFactory, Manifest,
};

use crate::checkpoint::{self, CheckpointOptions};
use crate::format::FormatKind;

/// The inspectors of every format shardsmith knows, with default options.
pub struct Inspectors;

/// The inspectors of every format shardsmith knows, with options
/// (`InspectorsWith(CheckpointOptions { scan_values: true })`).
pub struct InspectorsWith(pub CheckpointOptions);

impl InspectorFactory for Inspectors {
    fn inspector_for(&self, ctx: &FileContext<'_>, head: &[u8]) -> Option<Box<dyn Inspector>> {
        InspectorsWith(CheckpointOptions::default()).inspector_for(ctx, head)
    }

    fn check_layout(
        &self,
        root: &Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, Inspection>,
        manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        InspectorsWith(CheckpointOptions::default()).check_layout(
            root,
            files,
            inspections,
            manifest,
        )
    }
}

impl InspectorFactory for InspectorsWith {
    fn inspector_for(&self, ctx: &FileContext<'_>, head: &[u8]) -> Option<Box<dyn Inspector>> {
        if let Some(inspector) = crate::tokens::inspect::inspector_for(ctx, head) {
            return Some(inspector);
        }
        if let Some(name) = ctx.entry.and_then(|e| e.format.as_deref())
            && let Some(kind) = FormatKind::all().iter().find(|k| k.name() == name)
        {
            return Some(kind.inspector(ctx));
        }
        if let Some(inspector) = checkpoint::inspector_for(ctx, head, self.0) {
            return Some(inspector);
        }
        let base = ctx.path.rsplit('/').next().unwrap_or(ctx.path);
        if base.starts_with("shard.") && (base.ends_with(".mds") || base.contains(".mds.")) {
            return Some(FormatKind::Mds.inspector(ctx));
        }
        if ctx.path.ends_with(".parquet") || head.starts_with(b"PAR1") {
            return Some(FormatKind::Parquet.inspector(ctx));
        }
        // Tar shards, plain or compressed as a whole (the content decides which).
        let is_tar = [".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"]
            .iter()
            .any(|ext| ctx.path.ends_with(ext))
            || head.get(257..262) == Some(b"ustar");
        is_tar.then(|| FormatKind::Webdataset.inspector(ctx))
    }

    fn check_layout(
        &self,
        root: &Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, Inspection>,
        manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        let mut findings = checkpoint::check_layout(root, files, inspections, manifest);
        findings.extend(crate::mds::check_indices(
            root,
            files,
            inspections,
            manifest,
        ));
        findings.extend(crate::tokens::inspect::check_layout(
            files,
            inspections,
            manifest,
        ));
        findings
    }
}
