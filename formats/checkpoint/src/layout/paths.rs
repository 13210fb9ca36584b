//! Paths of a checkpoint's files relative to its root, the small files (indexes,
//! pointers) read whole, and the facts their inspections recorded.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::Inspection;

/// The directory of the file `rel` ("" at the root).
pub(super) fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// `name` inside the directory `dir`.
pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The number an inspection recorded under `key`.
pub(super) fn fact_u64(i: &Inspection, key: &str) -> Option<u64> {
    i.facts.get(key).and_then(Value::as_u64)
}

/// Largest index or pointer file read.
const MAX_SMALL_FILE: u64 = 64 << 20;

/// The text of the small file `rel` (an index, a pointer), if listed, at most
/// [`MAX_SMALL_FILE`] bytes and readable.
pub(super) fn read_small(root: &Path, rel: &str, files: &BTreeMap<String, u64>) -> Option<String> {
    if files.get(rel).is_none_or(|&s| s > MAX_SMALL_FILE) {
        return None;
    }
    std::fs::read_to_string(root.join(rel)).ok()
}
