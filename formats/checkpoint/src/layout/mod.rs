//! Checks across the files of a checkpoint, once each was read: a sharded index against
//! its shards, DCP `.metadata` against its data files, DeepSpeed's `latest` and
//! partition files, Megatron's tracker and rank directories.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection};

mod dcp;
mod paths;

use paths::{dir_of, fact_u64, join};

/// A DeepSpeed tag directory: partition count, model-parallel size, file names.
type TagDir = (Option<u64>, Option<u64>, BTreeSet<String>);
/// A Megatron iteration: (tensor, pipeline) ranks present, recorded TP and PP sizes.
type IterDir = (BTreeSet<(u64, Option<u64>)>, Option<u64>, Option<u64>);

/// Largest index or pointer file read.
const MAX_SMALL_FILE: u64 = 64 << 20;

fn read_small(root: &Path, rel: &str, files: &BTreeMap<String, u64>) -> Option<String> {
    if files.get(rel).is_none_or(|&s| s > MAX_SMALL_FILE) {
        return None;
    }
    std::fs::read_to_string(root.join(rel)).ok()
}

/// Every layout check.
pub fn check(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for rel in files.keys() {
        if rel.ends_with(".index.json") {
            index(root, rel, files, inspections, &mut out);
        }
    }
    dcp::check(root, files, inspections, &mut out);
    deepspeed(root, files, inspections, &mut out);
    megatron(root, files, inspections, &mut out);
    out
}

fn index(
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
    let dir = dir_of(rel);
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
        for t in tensors.iter().filter(|t| !held.contains(**t)) {
            out.push(Finding::error(
                FindingKind::IndexMismatch,
                &shard_rel,
                format!("{rel} puts tensor `{t}` in this shard, which does not hold it"),
            ));
        }
        for t in &held {
            owner
                .entry((*t).to_string())
                .or_default()
                .push(shard.to_string());
            if !map.contains_key(*t) {
                out.push(Finding::warning(
                    FindingKind::IndexMismatch,
                    &shard_rel,
                    format!(
                        "tensor `{t}` is in this shard but not in {rel}: loaders will not find it"
                    ),
                ));
            }
        }
    }
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

fn deepspeed(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    out: &mut Vec<Finding>,
) {
    for rel in files.keys() {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name != "latest" && name != "latest_universal" {
            continue;
        }
        let Some(text) = read_small(root, rel, files) else {
            continue;
        };
        let tag = text.trim();
        let target = join(dir_of(rel), tag);
        let exists = !tag.is_empty()
            && !tag.contains('\n')
            && files.keys().any(|f| f.starts_with(&format!("{target}/")));
        if !exists {
            out.push(
                Finding::error(
                    FindingKind::BadPointer,
                    rel,
                    format!(
                        "points at `{tag}`, which holds no checkpoint files: a resume would fail"
                    ),
                )
                .values(
                    format!("a checkpoint directory `{target}`"),
                    "nothing there",
                ),
            );
        }
    }
    // Per tag directory: partition files complete for the recorded partition count.
    let mut dirs: BTreeMap<&str, TagDir> = BTreeMap::new();
    for rel in files.keys() {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if !(name.ends_with("_optim_states.pt") || name.ends_with("_model_states.pt")) {
            continue;
        }
        let entry = dirs.entry(dir_of(rel)).or_default();
        entry.2.insert(name.to_string());
        if let Some(i) = inspections.get(rel) {
            entry.0 = entry.0.or(fact_u64(i, "deepspeed.partition_count"));
            entry.1 = entry.1.or(fact_u64(i, "deepspeed.mp_world_size"));
        }
    }
    for (dir, (partitions, mp, names)) in dirs {
        let bf16 = names.iter().any(|n| n.starts_with("bf16_"));
        let prefix = if bf16 { "bf16_" } else { "" };
        let mp_ranks = mp.unwrap_or(1).min(4096);
        for m in 0..mp_ranks {
            let model = format!("mp_rank_{m:02}_model_states.pt");
            let zero3 = names
                .iter()
                .any(|n| n.starts_with("zero_pp_rank_") && n.ends_with("_model_states.pt"));
            if mp.is_some() && !zero3 && !names.contains(&model) {
                out.push(Finding::error(
                    FindingKind::MissingFile,
                    join(dir, &model),
                    format!("model states of model-parallel rank {m} of {mp_ranks} are missing"),
                ));
            }
            let Some(count) = partitions else { continue };
            for dp in 0..count.min(65_536) {
                let optim = format!("{prefix}zero_pp_rank_{dp}_mp_rank_{m:02}_optim_states.pt");
                if !names.contains(&optim) {
                    out.push(Finding::error(
                        FindingKind::MissingFile,
                        join(dir, &optim),
                        format!("ZeRO partition {dp} of {count} is missing (\"Expected {count} of '*_optim_states.pt'\"): a checkpoint not saved by every process, or overwritten"),
                    ));
                }
            }
        }
    }
}

fn megatron(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    out: &mut Vec<Finding>,
) {
    for rel in files
        .keys()
        .filter(|r| r.ends_with("latest_checkpointed_iteration.txt"))
    {
        let dir = dir_of(rel);
        let Some(text) = read_small(root, rel, files) else {
            continue;
        };
        let text = text.trim();
        let target = match text.parse::<u64>() {
            Ok(n) => format!("iter_{n:07}"),
            Err(_) if text == "release" => "release".to_string(),
            Err(_) => {
                out.push(Finding::error(
                    FindingKind::BadPointer,
                    rel,
                    format!("tracker holds {text:?}, neither an iteration number nor `release`"),
                ));
                continue;
            }
        };
        let target_rel = join(dir, &target);
        if !files
            .keys()
            .any(|f| f.starts_with(&format!("{target_rel}/")))
        {
            out.push(
                Finding::error(
                    FindingKind::BadPointer,
                    rel,
                    format!("points at iteration `{target}`, which holds no checkpoint files: a resume would fail"),
                )
                .values(format!("a directory `{target_rel}`"), "nothing there"),
            );
        }
        if let Ok(n) = text.parse::<u64>() {
            let newer: BTreeSet<&str> = files
                .keys()
                .filter_map(|f| f.strip_prefix(&join(dir, "iter_")))
                .filter_map(|f| f.split('/').next())
                .filter(|it| it.parse::<u64>().is_ok_and(|i| i > n))
                .collect();
            for it in newer {
                out.push(Finding::warning(
                    FindingKind::StaleFile,
                    join(dir, &format!("iter_{it}")),
                    format!("an iteration newer than the tracker ({n}): a save that never finished, or a tracker not updated"),
                ));
            }
        }
    }
    // Per iteration directory: every tensor/pipeline rank directory present.
    let mut iters: BTreeMap<&str, IterDir> = BTreeMap::new();
    for rel in files.keys().filter(|r| r.ends_with("/model_optim_rng.pt")) {
        let rank_path = dir_of(rel);
        let (iter_dir, rank_dir) = rank_path.rsplit_once('/').unwrap_or(("", rank_path));
        let Some(ranks) = rank_dir.strip_prefix("mp_rank_") else {
            continue;
        };
        let mut nums = ranks.split('_').map(|n| n.parse::<u64>().ok());
        let (Some(Some(tp)), pp) = (nums.next(), nums.next().flatten()) else {
            continue;
        };
        let entry = iters.entry(iter_dir).or_default();
        entry.0.insert((tp, pp));
        if let Some(i) = inspections.get(rel) {
            entry.1 = entry.1.or(fact_u64(i, "megatron.tp"));
            entry.2 = entry.2.or(fact_u64(i, "megatron.pp"));
        }
    }
    for (iter_dir, (present, tp, pp)) in iters {
        let uses_pp = present.iter().any(|(_, p)| p.is_some());
        let tp = tp
            .unwrap_or_else(|| present.iter().map(|r| r.0 + 1).max().unwrap_or(1))
            .min(4096);
        let pp = if uses_pp {
            pp.unwrap_or_else(|| {
                present
                    .iter()
                    .filter_map(|r| r.1)
                    .max()
                    .map_or(1, |m| m + 1)
            })
            .min(4096)
        } else {
            1
        };
        for t in 0..tp {
            for p in 0..pp {
                let key = (t, uses_pp.then_some(p));
                if present.contains(&key) {
                    continue;
                }
                let dir = if uses_pp {
                    format!("mp_rank_{t:02}_{p:03}")
                } else {
                    format!("mp_rank_{t:02}")
                };
                out.push(Finding::error(
                    FindingKind::MissingFile,
                    join(iter_dir, &format!("{dir}/model_optim_rng.pt")),
                    format!("rank file missing: the checkpoint was saved with tensor parallel {tp} × pipeline parallel {pp}"),
                ));
            }
        }
    }
}
