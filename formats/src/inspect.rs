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
            || head.get(257..262) == Some(b"ustar")
            || compressed_tar(head);
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

/// True when `head` starts a gzip or zstd stream whose first decompressed block is a
/// ustar header: a compressed tar under any name (`data.gz`), told apart from other
/// compressed files (`corpus.jsonl.zst`) by decompressing 512 bytes.
fn compressed_tar(head: &[u8]) -> bool {
    use std::io::Read;
    let mut block = Vec::with_capacity(512);
    // A stream cut short or damaged after its first block still counts: what was read
    // before the error stays in `block`.
    let _ = if head.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(head)
            .take(512)
            .read_to_end(&mut block)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::stream::read::Decoder::with_buffer(head)
            .and_then(|decoder| decoder.take(512).read_to_end(&mut block))
    } else {
        return false;
    };
    block.get(257..262) == Some(b"ustar")
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::compressed_tar;

    #[test]
    fn compressed_tars_are_told_by_content() {
        let mut tar = crate::webdataset::member_header("k.txt", 0)
            .unwrap()
            .as_bytes()
            .to_vec();
        tar.extend_from_slice(&[0; 1024]);
        let gzip = |data: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(data).unwrap();
            gz.finish().unwrap()
        };
        assert!(compressed_tar(&gzip(&tar)));
        assert!(compressed_tar(&zstd::bulk::compress(&tar, 3).unwrap()));
        assert!(!compressed_tar(&gzip(b"{\"text\": \"not a tar\"}\n")));
        assert!(!compressed_tar(
            &zstd::bulk::compress(&[7; 600], 3).unwrap()
        ));
        assert!(
            !compressed_tar(&tar),
            "a plain tar is told by its own magic"
        );
        assert!(!compressed_tar(&[0x1f, 0x8b]));
    }
}
