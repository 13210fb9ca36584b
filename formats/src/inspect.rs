//! Chooses the structural checker for a file: by the format a manifest recorded, by
//! extension, or by content (a ustar magic at byte 257, checkpoint magic bytes).
//! Dataset-level checks (an index against its shards) run in
//! [`Inspectors::check_layout`] once every file was read.

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
        if let Some(name) = ctx.entry.and_then(|e| e.format.as_deref()) {
            for kind in FormatKind::all() {
                let format = kind.build();
                if format.name() == name {
                    return Some(format.inspector(ctx.path));
                }
            }
        }
        if let Some(inspector) = checkpoint::inspector_for(ctx, head, self.0) {
            return Some(inspector);
        }
        let is_tar = ctx.path.ends_with(".tar") || head.get(257..262) == Some(b"ustar");
        is_tar.then(|| FormatKind::Webdataset.build().inspector(ctx.path))
    }

    fn check_layout(
        &self,
        root: &Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, Inspection>,
        manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        checkpoint::check_layout(root, files, inspections, manifest)
    }
}
