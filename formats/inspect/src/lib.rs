//! The registry of inspectors: chooses the structural checker for a file, by the
//! format a manifest recorded, by name, or by content, in this order: token files
//! (`shardsmith_tokens::inspect`), the shard format a manifest recorded, checkpoints
//! (magic bytes), then the shard formats' own sniffing
//! (`shardsmith_shard::registry::FormatDef`). Dataset-level checks (an index against
//! its shards, a checkpoint's metadata against its files) run in `check_layout` once
//! every file was read.
//!
//! Owns only that choice; the checkers themselves live with their formats. It sits
//! above the shard, token and checkpoint crates so that `verify`, `manifest`, `audit`,
//! the fuzz targets (and later bindings) share one registry. Must not know the command
//! line.

use std::collections::BTreeMap;
use std::path::Path;

use shardsmith_manifest::{
    FileContext, Finding, Inspection, Inspector, InspectorFactory, Manifest,
};

use shardsmith_checkpoint as checkpoint;
pub use shardsmith_checkpoint::CheckpointOptions;
use shardsmith_shard::FormatKind;

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
        if let Some(inspector) = shardsmith_tokens::inspect::inspector_for(ctx, head) {
            return Some(inspector);
        }
        if let Some(name) = ctx.entry.and_then(|e| e.format.as_deref())
            && let Some(kind) = FormatKind::from_name(name)
        {
            return Some(kind.inspector(ctx));
        }
        if let Some(inspector) = checkpoint::inspector_for(ctx, head, self.0) {
            return Some(inspector);
        }
        FormatKind::sniff(ctx.path, head).map(|kind| kind.inspector(ctx))
    }

    fn check_layout(
        &self,
        root: &Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, Inspection>,
        manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        let mut findings = checkpoint::check_layout(root, files, inspections, manifest);
        for kind in FormatKind::all() {
            findings.extend(kind.def().check_layout(root, files, inspections, manifest));
        }
        findings.extend(shardsmith_tokens::inspect::check_layout(
            files,
            inspections,
            manifest,
        ));
        findings
    }
}
