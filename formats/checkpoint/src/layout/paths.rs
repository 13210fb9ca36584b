//! Paths of a checkpoint's files relative to its root, and the facts their inspections
//! recorded.

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
