//! Checkpoint verification: safetensors (single and sharded), torch zip checkpoints,
//! legacy torch files and pickles (never executed), PyTorch DCP, DeepSpeed and Megatron
//! layouts, and content checks (zero runs, holes, NaN/Inf, wrong content, leftovers of
//! interrupted saves), all fed by the single read `verify` makes of every file.
//!
//! - [`inspector_for`] picks a checker per file by content (magic bytes), by the format
//!   a manifest recorded, or by name; a few small positioned reads before the pass
//!   locate a zip's central directory and map filesystem holes.
//! - [`check_layout`] checks what spans files once all were read: an index against its
//!   shards, DCP `.metadata` against its data files, DeepSpeed and Megatron pointers
//!   and rank files.
//! - [`audit`] surveys a training run's checkpoint directory, with the inspector
//!   registry its caller gives it.
//! - [`hfcache`] checks a Hugging Face hub cache: every blob against the digest it is
//!   named by, every snapshot symlink, every ref.
//!
//! Must not know: shard or token formats, the pipelines that write them, or the command
//! line; it depends on `shardsmith-manifest` alone. Synchronous; never prints, never
//! exits.

pub mod audit;
mod content;
mod dcp;
mod dcp_coverage;
mod error;
pub mod hfcache;
mod layout;
mod legacy;
pub mod listing;
mod names;
mod pickle;
mod pickle_inspector;
mod report;
mod safetensors;
pub mod tensors;
mod torch;
mod values;
mod zip;

use std::collections::BTreeMap;
use std::path::Path;

use shardsmith_manifest::{FileContext, Finding, FindingKind, Inspection, Inspector, Manifest};

pub use error::{Error, Result};
use legacy::LEGACY_MAGIC;
pub use names::{is_checkpoint_name, is_temp_leftover};
use pickle_inspector::{PickleInspector, PickleKind};
use report::Settings;

/// Options of the checkpoint checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Count NaN and Inf in every float tensor (bf16 and fp8 included).
    pub scan_values: bool,
}

/// Format names recorded in manifests for checkpoint files.
pub const FORMATS: &[&str] = &[
    "safetensors",
    "torch_zip",
    "dcp_data",
    "torch_legacy",
    "dcp_metadata",
    "pickle",
];

fn is_torch_zip(head: &[u8]) -> bool {
    if !head.starts_with(b"PK\x03\x04") || head.len() < 30 {
        return false;
    }
    let n = usize::from(u16::from_le_bytes([head[26], head[27]]));
    head.get(30..30 + n)
        .is_some_and(|name| name.ends_with(b"data.pkl") || name.ends_with(b".format_version"))
}

/// A checker for a checkpoint file, or `None` when the file is not one.
pub fn inspector_for(
    ctx: &FileContext<'_>,
    head: &[u8],
    options: CheckpointOptions,
) -> Option<Box<dyn Inspector>> {
    let rel = ctx.path;
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if is_temp_leftover(rel) {
        return Some(Box::new(Fixed::new(
            "leftover",
            Finding::warning(
                FindingKind::LeftoverTempFile,
                rel,
                "temporary file of an interrupted checkpoint save (the save never completed, or was not cleaned up); delete it once no save is running",
            ),
        )));
    }
    let recorded = ctx
        .entry
        .and_then(|e| e.format.as_deref())
        .filter(|f| FORMATS.contains(f));
    let checkpointish = recorded.is_some() || is_checkpoint_name(rel);
    let full = ctx.root.join(rel);
    let size = std::fs::metadata(&full).map_or(head.len() as u64, |m| m.len());
    if checkpointish && let Some(what) = content::wrong_content(head, size) {
        return Some(Box::new(Fixed::new(
            "wrong_content",
            Finding::error(
                FindingKind::WrongContent,
                rel,
                format!("the file is {what}"),
            ),
        )));
    }
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    let settings = || Settings {
        size,
        scan_values: options.scan_values,
        holes: content::holes(&full),
    };
    let zip = |format: &'static str, many: bool| -> Option<Box<dyn Inspector>> {
        let located = match std::fs::File::open(&full) {
            Ok(mut f) => zip::locate(&mut f, size, many),
            Err(_) => return None,
        };
        Some(Box::new(zip::ZipInspector::new(
            rel,
            format,
            located,
            settings(),
        )))
    };
    let pickle =
        |kind| -> Option<Box<dyn Inspector>> { Some(Box::new(PickleInspector::new(rel, kind))) };
    let is_pickle = head.first() == Some(&0x80) && head.get(1).is_some_and(|p| (2..=5).contains(p));
    if ext == "distcp" || recorded == Some("dcp_data") {
        let mut file = std::fs::File::open(&full).ok()?;
        let plan = dcp::locate(ctx.root, rel, &mut file, size, head);
        return Some(Box::new(dcp::DcpDataInspector::new(rel, plan, settings())));
    }
    if head.starts_with(LEGACY_MAGIC) {
        return Some(Box::new(legacy::LegacyInspector::new(rel)));
    }
    if is_torch_zip(head) || (checkpointish && head.starts_with(b"PK\x03\x04")) {
        return zip("torch_zip", false);
    }
    if safetensors::is_safetensors(head, size)
        || ext == "safetensors"
        || recorded == Some("safetensors")
    {
        return Some(Box::new(safetensors::SafetensorsInspector::new(
            rel,
            settings(),
        )));
    }
    if name == ".metadata" || recorded == Some("dcp_metadata") {
        return pickle(PickleKind::DcpMetadata);
    }
    if is_pickle && (checkpointish || matches!(ext, "pkl" | "pickle")) {
        return pickle(PickleKind::Plain);
    }
    if checkpointish {
        let shown = String::from_utf8_lossy(&head[..head.len().min(16)]).into_owned();
        return Some(Box::new(Fixed::new(
            "wrong_content",
            Finding::error(
                FindingKind::WrongContent,
                rel,
                format!(
                    "named like a checkpoint but holds no checkpoint format shardsmith knows (first bytes {shown:?})"
                ),
            ),
        )));
    }
    if recorded == Some("torch_zip") {
        return zip("torch_zip", false);
    }
    None
}

/// Checks that span files: indexes, DCP metadata, DeepSpeed and Megatron layouts.
pub fn check_layout(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    manifest: Option<&Manifest>,
) -> Vec<Finding> {
    let mut findings = layout::check(root, files, inspections);
    if let Some(manifest) = manifest {
        findings.extend(tensors::recorded::check(root, manifest, inspections));
    }
    findings
}

/// An inspector that reads nothing and reports one finding.
struct Fixed {
    format: &'static str,
    finding: Finding,
}

impl Fixed {
    fn new(format: &'static str, finding: Finding) -> Self {
        Self { format, finding }
    }
}

impl Inspector for Fixed {
    fn update(&mut self, _data: &[u8]) {}

    fn finish(self: Box<Self>) -> Inspection {
        Inspection {
            format: self.format.into(),
            findings: vec![self.finding],
            ..Inspection::default()
        }
    }
}
