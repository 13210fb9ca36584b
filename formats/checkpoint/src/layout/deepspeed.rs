//! DeepSpeed: the `latest` pointer and the partition files of each tag directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use shardsmith_manifest::{Finding, FindingKind, Inspection};

use super::paths::{dir_of, fact_u64, join, read_small};

/// A DeepSpeed tag directory: partition count, model-parallel size, file names.
type TagDir = (Option<u64>, Option<u64>, BTreeSet<String>);

/// DeepSpeed's `latest` pointers and the partition files of the tags they name.
pub(super) fn check(
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
