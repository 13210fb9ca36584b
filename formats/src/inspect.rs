//! Chooses the structural checker for a file: by the format a manifest recorded, by
//! extension, or by content (a ustar magic at byte 257; token files: see
//! [`crate::tokens::inspect`]). Dataset-level checks (an index
//! against its shards) run in [`Inspectors::check_layout`] once every file was read.

use std::collections::BTreeMap;
use std::path::Path;

use shardsmith_manifest::{
    FileContext, Finding, Inspection, Inspector, InspectorFactory, Manifest,
};

use crate::format::FormatKind;

/// The inspectors of every format shardsmith knows.
pub struct Inspectors;

impl InspectorFactory for Inspectors {
    fn inspector_for(&self, ctx: &FileContext<'_>, head: &[u8]) -> Option<Box<dyn Inspector>> {
        if let Some(inspector) = crate::tokens::inspect::inspector_for(ctx, head) {
            return Some(inspector);
        }
        if let Some(name) = ctx.entry.and_then(|e| e.format.as_deref()) {
            for kind in FormatKind::all() {
                let format = kind.build();
                if format.name() == name {
                    return Some(format.inspector(ctx.path));
                }
            }
        }
        let is_tar = ctx.path.ends_with(".tar") || head.get(257..262) == Some(b"ustar");
        is_tar.then(|| FormatKind::Webdataset.build().inspector(ctx.path))
    }

    fn check_layout(
        &self,
        _root: &Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, Inspection>,
        manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        crate::tokens::inspect::check_layout(files, inspections, manifest)
    }
}
