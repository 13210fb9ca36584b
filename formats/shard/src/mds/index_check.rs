//! Verifying the `index.json` files of an MDS dataset against the shards they list
//! ([`check_indices`]): every entry's keys, names, sizes and hashes, and the shards no
//! index lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};
use shardsmith_manifest::{Finding, FindingKind, Inspection, Manifest};

use super::codec::Family;
use super::pyjson;

const ENTRY_KEYS: [&str; 11] = [
    "column_encodings",
    "column_names",
    "column_sizes",
    "compression",
    "format",
    "hashes",
    "raw_data",
    "samples",
    "size_limit",
    "version",
    "zip_data",
];
const CONFIG_KEYS: [&str; 8] = [
    "column_encodings",
    "column_names",
    "column_sizes",
    "compression",
    "format",
    "hashes",
    "size_limit",
    "version",
];

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn is_shard_name(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut parts = base.split('.');
    parts.next() == Some("shard")
        && parts
            .next()
            .is_some_and(|n| n.len() >= 5 && n.bytes().all(|b| b.is_ascii_digit()))
        && parts.next() == Some("mds")
        && parts
            .next()
            .is_none_or(|ext| Family::from_ext(ext).is_some())
        && parts.next().is_none()
}

/// Compares every MDS `index.json` under the root with the shards it lists, and reports
/// MDS shards no index lists.
pub fn check_indices(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    manifest: Option<&Manifest>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut referenced = BTreeSet::new();
    let mut saw_index = false;
    for index_path in files
        .keys()
        .filter(|p| *p == "index.json" || p.ends_with("/index.json"))
    {
        let Ok(bytes) = std::fs::read(root.join(index_path)) else {
            continue;
        };
        let index: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                findings.push(Finding::error(
                    FindingKind::IndexInvalid,
                    index_path,
                    format!("is not JSON: {e}"),
                ));
                continue;
            }
        };
        let Some(shards) = index.get("shards").and_then(Value::as_array) else {
            continue;
        };
        saw_index = true;
        if index["version"] != 2 {
            findings.push(Finding::error(
                FindingKind::IndexInvalid,
                index_path,
                "top-level version is not 2: streaming refuses it",
            ));
        }
        let dir = index_path.rsplit_once('/').map_or("", |(d, _)| d);
        for (i, entry) in shards.iter().enumerate() {
            check_entry(
                index_path,
                dir,
                i,
                entry,
                files,
                inspections,
                &mut referenced,
                &mut findings,
            );
        }
    }
    let listed_in_manifest =
        |path: &str| manifest.is_none_or(|m| m.files.iter().any(|f| f.path == path));
    for path in files
        .keys()
        .filter(|p| is_shard_name(p) && !referenced.contains(*p))
    {
        if listed_in_manifest(path) {
            let message = if saw_index {
                "MDS shard no index.json lists: readers never see it (stale or foreign)"
            } else {
                "MDS shard without an index.json: readers cannot use it"
            };
            findings.push(Finding::error(FindingKind::UnlistedFile, path, message));
        }
    }
    findings.sort_by(|a, b| {
        (&a.path, a.offset, a.kind, &a.message).cmp(&(&b.path, b.offset, b.kind, &b.message))
    });
    findings.dedup();
    findings
}

#[allow(clippy::too_many_arguments)]
fn check_entry(
    index_path: &str,
    dir: &str,
    i: usize,
    entry: &Value,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    referenced: &mut BTreeSet<String>,
    findings: &mut Vec<Finding>,
) {
    let invalid = |message: String| Finding::error(FindingKind::IndexInvalid, index_path, message);
    let Some(object) = entry.as_object() else {
        findings.push(invalid(format!("shard {i} is not an object")));
        return;
    };
    check_entry_shape(index_path, i, entry, object, findings);
    let config = json!(
        CONFIG_KEYS
            .iter()
            .map(|k| ((*k).to_string(), entry[*k].clone()))
            .collect::<serde_json::Map<_, _>>()
    );
    let raw = &entry["raw_data"];
    let zip = &entry["zip_data"];
    let Some(raw_name) = raw["basename"].as_str() else {
        findings.push(invalid(format!("shard {i} has no raw_data.basename")));
        return;
    };
    let raw_path = join(dir, raw_name);
    let zip_path = zip["basename"].as_str().map(|z| join(dir, z));
    referenced.insert(raw_path.clone());
    if let Some(z) = &zip_path {
        referenced.insert(z.clone());
    }
    let present_raw = files.contains_key(&raw_path);
    let present_zip = zip_path.as_ref().is_some_and(|z| files.contains_key(z));
    if !present_raw && !present_zip {
        let shown = zip_path.clone().unwrap_or(raw_path.clone());
        findings.push(Finding::error(
            FindingKind::MissingFile,
            &shown,
            format!("listed in {index_path} (shard {i}) but not present"),
        ));
        return;
    }
    let check = EntryCheck {
        index_path,
        i,
        entry,
        config,
    };
    for (path, info, zipped) in [
        (Some(raw_path.clone()), raw, false),
        (zip_path.clone(), zip, true),
    ] {
        let Some(path) = path.filter(|p| files.contains_key(p)) else {
            continue;
        };
        check.file(&path, info, zipped, files[&path], inspections, findings);
    }
}

/// The keys, format and version of entry `i`, as streaming's reader expects them.
fn check_entry_shape(
    index_path: &str,
    i: usize,
    entry: &Value,
    object: &serde_json::Map<String, Value>,
    findings: &mut Vec<Finding>,
) {
    let invalid = |message: String| Finding::error(FindingKind::IndexInvalid, index_path, message);
    let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
    let missing: Vec<&str> = ENTRY_KEYS
        .iter()
        .copied()
        .filter(|k| !keys.contains(k))
        .collect();
    let extra: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !ENTRY_KEYS.contains(k))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        findings.push(invalid(format!(
            "shard {i} has missing keys {missing:?} / unexpected keys {extra:?}: streaming's reader raises TypeError"
        )));
    }
    if entry["version"] != 2 || entry["format"] != "mds" {
        findings.push(invalid(format!("shard {i} is not format `mds` version 2")));
    }
}

/// Entry `i` of an index, which its present files are checked against.
struct EntryCheck<'a> {
    index_path: &'a str,
    i: usize,
    entry: &'a Value,
    /// The entry's config keys, as a shard embeds them.
    config: Value,
}

impl EntryCheck<'_> {
    fn mismatch(&self, path: &str, what: &str, expected: &Value, actual: &Value) -> Finding {
        let (index_path, i) = (self.index_path, self.i);
        Finding::error(
            FindingKind::IndexMismatch,
            path,
            format!("{what} differs from {index_path} (shard {i})"),
        )
        .values(expected.to_string(), actual.to_string())
    }

    /// The present file `path` (of `size` bytes; the zip file when `zipped`) against
    /// `info` (its `raw_data` or `zip_data`) and the entry.
    fn file(
        &self,
        path: &str,
        info: &Value,
        zipped: bool,
        size: u64,
        inspections: &BTreeMap<String, Inspection>,
        findings: &mut Vec<Finding>,
    ) {
        let entry = self.entry;
        if info["bytes"].as_u64() != Some(size) {
            findings.push(self.mismatch(path, "file size", &info["bytes"], &Value::from(size)));
        }
        let Some(inspection) = inspections.get(path) else {
            return;
        };
        let facts = &inspection.facts;
        if let Some(samples) = inspection.samples
            && entry["samples"].as_u64() != Some(samples)
        {
            findings.push(self.mismatch(
                path,
                "sample count",
                &entry["samples"],
                &Value::from(samples),
            ));
        }
        if let Some(embedded) = facts.get("config")
            && pyjson::dumps(embedded) != pyjson::dumps(&self.config)
        {
            findings.push(self.mismatch(path, "embedded config", &self.config, embedded));
        }
        let raw = &entry["raw_data"];
        let checks: Vec<(&str, &Value, Option<&Value>)> = if zipped {
            vec![
                ("decompressed size", &raw["bytes"], facts.get("raw_bytes")),
                ("zip_data hashes", &info["hashes"], facts.get("zip_hashes")),
                (
                    "raw_data hashes (after decompression)",
                    &raw["hashes"],
                    facts.get("raw_hashes"),
                ),
            ]
        } else {
            vec![("raw_data hashes", &info["hashes"], facts.get("raw_hashes"))]
        };
        for (what, expected, actual) in checks {
            let Some(actual) = actual else { continue };
            if differs(expected, actual) {
                findings.push(self.mismatch(path, what, expected, actual));
            }
        }
    }
}

/// Whether a listed value differs from the one found; of two hash maps only the
/// algorithms both name are compared.
fn differs(expected: &Value, actual: &Value) -> bool {
    match (expected.as_object(), actual.as_object()) {
        (Some(want), Some(got)) => want
            .iter()
            .any(|(algo, hex)| got.get(algo).is_some_and(|g| g != hex)),
        _ => expected != actual,
    }
}
