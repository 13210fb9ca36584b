//! Megatron: the iteration tracker and the rank directories of each iteration.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use shardsmith_manifest::{Finding, FindingKind, Inspection};

use super::paths::{dir_of, fact_u64, join, read_small};

/// A Megatron iteration: (tensor, pipeline) ranks present, recorded TP and PP sizes.
type IterDir = (BTreeSet<(u64, Option<u64>)>, Option<u64>, Option<u64>);

/// Megatron's iteration trackers and the rank directories of each iteration.
pub(super) fn check(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    out: &mut Vec<Finding>,
) {
    for rel in files
        .keys()
        .filter(|r| r.ends_with("latest_checkpointed_iteration.txt"))
    {
        check_tracker(root, rel, files, out);
    }
    // Per iteration directory: every tensor/pipeline rank directory present.
    for (iter_dir, (present, tp, pp)) in iterations(files, inspections) {
        check_ranks(iter_dir, &present, tp, pp, out);
    }
}

/// The tracker `rel`: it names an iteration (or `release`) that has files, and no
/// iteration beside it is newer.
fn check_tracker(root: &Path, rel: &str, files: &BTreeMap<String, u64>, out: &mut Vec<Finding>) {
    let dir = dir_of(rel);
    let Some(text) = read_small(root, rel, files) else {
        return;
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
            return;
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

/// The iteration directories holding rank files: the (tensor, pipeline) ranks present,
/// and the parallel sizes their files record.
fn iterations<'a>(
    files: &'a BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
) -> BTreeMap<&'a str, IterDir> {
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
    iters
}

/// A finding for each rank directory of `iter_dir` missing among `present`, for the
/// tensor and pipeline parallel sizes recorded (`tp`, `pp`) or implied by the ranks.
fn check_ranks(
    iter_dir: &str,
    present: &BTreeSet<(u64, Option<u64>)>,
    tp: Option<u64>,
    pp: Option<u64>,
    out: &mut Vec<Finding>,
) {
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
