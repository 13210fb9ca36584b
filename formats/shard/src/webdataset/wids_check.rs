//! `verify`'s check of every `wids-index.json` against the shards it lists: a missing
//! shard, another size or another sample count is a finding, since wids would then
//! read the wrong bytes (a stale index after a shard was rewritten).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection};

use super::wids::WIDS_INDEX;

/// Findings of every `wids-index.json` under `root` against the present `files` (path
/// to size) and what their inspectors counted.
pub(crate) fn check_wids_indexes(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let suffix = format!("/{WIDS_INDEX}");
    for index_path in files
        .keys()
        .filter(|p| *p == WIDS_INDEX || p.ends_with(&suffix))
    {
        let Ok(bytes) = std::fs::read(root.join(index_path)) else {
            continue;
        };
        let invalid =
            |message: String| Finding::error(FindingKind::IndexInvalid, index_path, message);
        let index: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                findings.push(invalid(format!("is not JSON: {e}")));
                continue;
            }
        };
        let Some(shards) = index["shardlist"].as_array() else {
            findings.push(invalid("has no shardlist: wids cannot open it".into()));
            continue;
        };
        let dir = index_path.strip_suffix(WIDS_INDEX).unwrap_or("");
        for (i, entry) in shards.iter().enumerate() {
            let Some(url) = entry["url"].as_str() else {
                findings.push(invalid(format!("shard {i} has no url")));
                continue;
            };
            if url.contains("://") || url.starts_with('/') {
                continue; // not relative to the index: not ours to check
            }
            let path = format!("{dir}{url}");
            let Some(&size) = files.get(&path) else {
                findings.push(Finding::error(
                    FindingKind::MissingFile,
                    &path,
                    format!("listed by {index_path} (shard {i}) but not present"),
                ));
                continue;
            };
            let stale = |what: &str, expected: u64, actual: u64| {
                Finding::error(
                    FindingKind::IndexMismatch,
                    &path,
                    format!("{what} differs from {index_path} (shard {i}): the index is stale, wids would read the wrong bytes"),
                )
                .values(expected, actual)
            };
            match entry["filesize"].as_u64() {
                Some(expected) if expected != size => findings.push(stale("size", expected, size)),
                _ => {}
            }
            let counted = inspections.get(&path).and_then(|i| i.samples);
            match (entry["nsamples"].as_u64(), counted) {
                (Some(expected), Some(actual)) if expected != actual => {
                    findings.push(stale("sample count", expected, actual));
                }
                (None, _) => findings.push(invalid(format!("shard {i} has no nsamples"))),
                _ => {}
            }
        }
    }
    findings
}
