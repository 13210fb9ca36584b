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
mod dispatch;
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

use shardsmith_manifest::{Finding, Inspection, Manifest};

pub use dispatch::{CheckpointOptions, FORMATS, inspector_for};
pub use error::{Error, Result};
pub use names::{is_checkpoint_name, is_temp_leftover};

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
