//! The final step of a split run: the tasks' records checked and joined into the
//! dataset a single run writes.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;
use shardsmith_manifest::{Duplicates, FileEntry, MANIFEST_FILE, Manifest, Skipped};
use shardsmith_shard::FormatKind;
use shardsmith_store::OutputSink;
use shardsmith_store::resume;
use shardsmith_store::tasks::{self, FinishReport, Head};

use super::share::{Share, job};
use crate::{Error, Result};

/// Every task's record; refuses while one is missing or they disagree, or their shares
/// do not tile one plan.
fn records(sink: &dyn OutputSink) -> Result<Vec<(Head, Share)>> {
    let found: Vec<(Head, Share)> = tasks::load_all(sink, &job(&|_| false))?;
    let total = found[0].1.total_plans;
    let mut next = 0;
    for (head, share) in &found {
        if share.plans.start != next
            || share.total_plans != total
            || share.records.len() != share.plans.len()
        {
            return Err(Error::Task(format!(
                "task {} wrote plans {}..{} of {}, which does not follow on from the task before it (plans up to {next}): the tasks did not plan alike; run them again",
                head.index, share.plans.start, share.plans.end, share.total_plans
            )));
        }
        next = share.plans.end;
    }
    if next != total {
        return Err(Error::Task(format!(
            "the tasks wrote plans up to {next} of {total}"
        )));
    }
    Ok(found)
}

/// Finishes a split run in `sink`: the dataset files, `SHA256SUMS` and the manifest,
/// byte-identical to what a single run of the same command writes.
pub fn finish(sink: &dyn OutputSink) -> Result<FinishReport> {
    if let Some(bytes) = sink.read(MANIFEST_FILE)?
        && resume::run_fingerprint(sink)?.is_none()
    {
        let (manifest, _) = Manifest::parse(&bytes, MANIFEST_FILE.as_ref())?;
        return Ok(FinishReport {
            manifest,
            tasks: 0,
            sources: Vec::new(),
            renamed: 0,
            warnings: Vec::new(),
        });
    }
    let found = records(sink)?;
    let count = found.len() as u32;
    let sources = tasks::sources(&found.iter().map(|(h, _)| h).collect::<Vec<_>>());
    let (first, first_share) = &found[0];
    let mut manifest = first.manifest.clone();
    let format_state = first_share.format_state.clone();
    let kind = format_kind(&manifest)?;

    let mut skipped: Vec<Skipped> = std::mem::take(&mut manifest.skipped);
    let (shards, renamed) = place_shards(sink, &found, &mut skipped)?;
    if shards.is_empty() {
        return Err(Error::Task(
            "every sample was left out while writing: no shard to finish".into(),
        ));
    }
    let facts: Vec<(&str, &Value)> = shards
        .iter()
        .map(|(entry, facts)| (entry.path.as_str(), facts))
        .collect();
    let extra = kind
        .dataset_files(&format_state, &facts)
        .map_err(|e| Error::Finish(e.to_string()))?;
    manifest.files = shards.into_iter().map(|(entry, _)| entry).collect();
    manifest
        .files
        .extend(shardsmith_shard::format::write_files(sink, extra)?);
    skipped.sort();
    manifest.skipped = skipped;
    let across = deduplicated(&mut manifest, &found);
    // Complete from here on: what cannot be cleared is said, not failed on.
    let mut warnings: Vec<String> = shardsmith_store::finish::seal(sink, &mut manifest)?
        .into_iter()
        .collect();
    warnings.extend(across);
    if let Err(e) = tasks::clean_up(sink) {
        warnings.push(shardsmith_store::finish::left_state(sink, &e));
    }
    Ok(FinishReport {
        warnings,
        manifest,
        tasks: count,
        sources,
        renamed,
    })
}

/// With `--dedup`: the duplicates every task left out of its share, in plan order, into
/// the manifest. Each task dedups its own share only (deduplicating across shares would
/// make every task read the whole input); samples that repeat one of an earlier task's
/// are counted here from the recorded digests, kept, and said in the returned warning.
fn deduplicated(manifest: &mut Manifest, found: &[(Head, Share)]) -> Option<String> {
    if manifest.options.get("dedup") != Some(&Value::Bool(true)) {
        return None;
    }
    let mut duplicates = Duplicates::default();
    let mut earlier: HashSet<u128> = HashSet::new();
    let mut across = 0u64;
    for (_, share) in found {
        let mut own: Vec<u128> = Vec::new();
        for plan in &share.records {
            duplicates.extend(plan.duplicates.clone());
            for &(_, digest) in plan.digests.iter().flat_map(|d| &d.kept) {
                if earlier.contains(&digest) {
                    across += 1;
                }
                own.push(digest);
            }
        }
        earlier.extend(own);
    }
    manifest.duplicates = Some(duplicates);
    (across > 0).then(|| {
        format!(
            "{across} packed sample(s) have the content digest of a sample another task packed: each task of a split run leaves out only the duplicates within its own share, so these are kept (a single run, or `pack --dedup` of the merged output, leaves them out)"
        )
    })
}

/// The format the tasks name.
fn format_kind(manifest: &Manifest) -> Result<FormatKind> {
    manifest
        .format
        .as_deref()
        .and_then(FormatKind::from_name)
        .ok_or_else(|| {
            Error::Task(format!(
                "the tasks name no known format ({:?})",
                manifest.format
            ))
        })
}

/// Every task's shards under their final names, numbered on past any plan that came
/// out empty (renaming those after it), with their facts; also how many were renamed.
/// The samples the tasks left out join `skipped`.
fn place_shards(
    sink: &dyn OutputSink,
    found: &[(Head, Share)],
    skipped: &mut Vec<Skipped>,
) -> Result<(Vec<(FileEntry, Value)>, usize)> {
    let planned: Vec<String> = found
        .iter()
        .flat_map(|(_, share)| share.records.iter().map(|p| p.planned.clone()))
        .collect();
    let present: BTreeSet<String> = sink.list()?.into_iter().collect();
    let mut shards: Vec<(FileEntry, Value)> = Vec::new();
    let mut renamed = 0;
    for (head, share) in found {
        for plan in &share.records {
            skipped.extend(plan.skipped.iter().cloned());
            let Some(shard) = &plan.shard else { continue };
            let mut entry = shard.entry.clone();
            let target = &planned[shards.len()];
            if &entry.path != target {
                // A re-run of an interrupted merge finds it moved already.
                if present.contains(&entry.path) {
                    sink.rename(&entry.path, target)?;
                } else if !present.contains(target) {
                    return Err(missing(sink, &entry.path, head.index));
                }
                entry.path.clone_from(target);
                renamed += 1;
            } else if !present.contains(&entry.path) {
                return Err(missing(sink, &entry.path, head.index));
            }
            shards.push((entry, shard.facts.clone()));
        }
    }
    Ok((shards, renamed))
}

fn missing(sink: &dyn OutputSink, path: &str, task: u32) -> Error {
    Error::Task(format!(
        "shard `{}/{path}`, written by task {task}, is missing: run task {task} again (it rewrites what is gone), then merge again",
        sink.describe()
    ))
}
