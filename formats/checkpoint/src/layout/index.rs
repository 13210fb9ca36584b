//! A sharded checkpoint's `*.index.json` against the shards it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection};

use super::paths::{dir_of, join, read_small};

/// The index `rel` against the shards it names and the tensors they hold.
pub(super) fn check(
    root: &Path,
    rel: &str,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    out: &mut Vec<Finding>,
) {
    let Some(text) = read_small(root, rel, files) else {
        return;
    };
    let Ok(json) = serde_json::from_str::<Value>(&text) else {
        out.push(Finding::error(
            FindingKind::IndexMismatch,
            rel,
            "index is not valid JSON",
        ));
        return;
    };
    let Some(map) = json.get("weight_map").and_then(Value::as_object) else {
        return;
    };
    let by_shard = by_shard(rel, map, out);
    let dir = dir_of(rel);
    let mut owner: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (shard, tensors) in &by_shard {
        let shard_rel = join(dir, shard);
        if !files.contains_key(&shard_rel) {
            out.push(
                Finding::error(
                    FindingKind::MissingFile,
                    &shard_rel,
                    format!(
                        "named by {rel} for {} tensor(s) but not present",
                        tensors.len()
                    ),
                )
                .values("a shard file", "no file"),
            );
            continue;
        }
        let Some(held) = inspections
            .get(&shard_rel)
            .and_then(|i| i.facts.get("tensors"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let held: BTreeSet<&str> = held.iter().filter_map(Value::as_str).collect();
        check_shard(rel, map, &shard_rel, tensors, &held, out);
        for t in &held {
            owner
                .entry((*t).to_string())
                .or_default()
                .push(shard.to_string());
        }
    }
    check_series(rel, &owner, &by_shard, out);
}

/// The tensors of the index's `weight_map` by the shard it names; a finding for each
/// entry that is not a file name.
fn by_shard<'a>(
    rel: &str,
    map: &'a serde_json::Map<String, Value>,
    out: &mut Vec<Finding>,
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut by_shard: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (tensor, shard) in map {
        let Some(shard) = shard.as_str() else {
            out.push(Finding::error(
                FindingKind::IndexMismatch,
                rel,
                format!("weight_map entry `{tensor}` is not a file name"),
            ));
            continue;
        };
        by_shard.entry(shard).or_default().insert(tensor);
    }
    by_shard
}

/// The shard `shard_rel` against the index `rel`: every tensor the index puts in it
/// (`tensors`) held, every tensor it holds (`held`) in the index.
fn check_shard(
    rel: &str,
    map: &serde_json::Map<String, Value>,
    shard_rel: &str,
    tensors: &BTreeSet<&str>,
    held: &BTreeSet<&str>,
    out: &mut Vec<Finding>,
) {
    for t in tensors.iter().filter(|t| !held.contains(**t)) {
        out.push(Finding::error(
            FindingKind::IndexMismatch,
            shard_rel,
            format!("{rel} puts tensor `{t}` in this shard, which does not hold it"),
        ));
    }
    for t in held {
        if !map.contains_key(*t) {
            out.push(Finding::warning(
                FindingKind::IndexMismatch,
                shard_rel,
                format!("tensor `{t}` is in this shard but not in {rel}: loaders will not find it"),
            ));
        }
    }
}

/// The shards as a series: no tensor held by two of them (`owner`: the shards holding
/// each tensor), and as many shards as their `-of-N` names say.
fn check_series(
    rel: &str,
    owner: &BTreeMap<String, Vec<String>>,
    by_shard: &BTreeMap<&str, BTreeSet<&str>>,
    out: &mut Vec<Finding>,
) {
    // Shards in the directory that the index does not name but that belong to its series.
    for (t, shards) in owner.iter().filter(|(_, s)| s.len() > 1) {
        out.push(Finding::error(
            FindingKind::IndexMismatch,
            rel,
            format!(
                "tensor `{t}` is held by {} shards: {}",
                shards.len(),
                shards.join(", ")
            ),
        ));
    }
    let total = by_shard
        .keys()
        .filter_map(|s| {
            s.rsplit_once("-of-")
                .and_then(|(_, n)| n.split('.').next()?.parse::<usize>().ok())
        })
        .max();
    if let Some(total) = total
        && total != by_shard.len()
    {
        out.push(
            Finding::error(
                FindingKind::IndexMismatch,
                rel,
                format!(
                    "shard names say -of-{total:05} but the index names {} shard(s)",
                    by_shard.len()
                ),
            )
            .values(total, by_shard.len()),
        );
    }
}
