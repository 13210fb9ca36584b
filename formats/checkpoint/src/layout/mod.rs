//! Checks across the files of a checkpoint, once each was read: a sharded index against
//! its shards, DCP `.metadata` against its data files, DeepSpeed's `latest` and
//! partition files, Megatron's tracker and rank directories.

use std::collections::BTreeMap;
use std::path::Path;

use shardsmith_manifest::{Finding, Inspection};

mod dcp;
mod deepspeed;
mod index;
mod megatron;
mod paths;

/// Every layout check.
pub fn check(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for rel in files.keys() {
        if rel.ends_with(".index.json") {
            index::check(root, rel, files, inspections, &mut out);
        }
    }
    dcp::check(root, files, inspections, &mut out);
    deepspeed::check(root, files, inspections, &mut out);
    megatron::check(root, files, inspections, &mut out);
    out
}
