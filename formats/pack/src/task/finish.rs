//! The final step of a split run: the tasks' records checked and joined into the
//! dataset a single run writes.

use std::collections::BTreeSet;

use serde_json::Value;
use shardsmith_manifest::{FileEntry, MANIFEST_FILE, Manifest, ManifestKind, Skipped, TEMP_PREFIX};
use shardsmith_shard::FormatKind;
use shardsmith_store::OutputSink;
use shardsmith_store::resume;

use super::record::{TaskRecord, Tasks, record_file, tasks_file};
use crate::{Error, Result};

/// What the final step did.
#[derive(Debug)]
pub struct FinishReport {
    /// The manifest written.
    pub manifest: Manifest,
    /// Tasks joined.
    pub tasks: u32,
    /// Where the tasks' indices came from (`SLURM_ARRAY_TASK_ID`, `--task-index`), each
    /// once.
    pub sources: Vec<String>,
    /// Shards renamed because a plan before them came out empty.
    pub renamed: usize,
}

/// True when `sink` holds the state of a split run (at least one task has started).
pub fn is_split_run(sink: &dyn OutputSink) -> Result<bool> {
    Ok(sink.read(&tasks_file())?.is_some())
}

/// Task indices as a reader re-submits them: `1,5,7-9`.
fn ranges(indices: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        out.push(if j > i + 1 {
            format!("{}-{}", indices[i], indices[j])
        } else if j == i + 1 {
            format!("{},{}", indices[i], indices[j])
        } else {
            indices[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// Reads every task's record; refuses while one is missing or they disagree.
fn records(sink: &dyn OutputSink) -> Result<Vec<TaskRecord>> {
    let bytes = sink.read(&tasks_file())?.unwrap_or_default();
    let tasks: Tasks = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Task(format!(
            "`{}/{}` cannot be read ({e}); run the tasks again",
            sink.describe(),
            tasks_file()
        ))
    })?;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for index in 0..tasks.count {
        match sink
            .read(&record_file(index))?
            .and_then(|b| serde_json::from_slice::<TaskRecord>(&b).ok())
        {
            Some(record) => found.push(record),
            None => missing.push(index),
        }
    }
    // A task run with another count says more than the tasks that count leaves missing.
    for record in &found {
        if record.count != tasks.count {
            return Err(Error::Task(format!(
                "the tasks disagree on their count: task {} was run as one of {} tasks, the task that started last as one of {}; every task of a run needs the same count: run them again with one count",
                record.index, record.count, tasks.count
            )));
        }
    }
    if !missing.is_empty() {
        let list = ranges(&missing);
        return Err(Error::Task(format!(
            "{} of {} task(s) have not finished: task index(es) {list} left no record in `{}`; run them again with the same command (Slurm: `sbatch --array={list} ...`; a Kubernetes Indexed Job retries failed indexes itself), then merge again; nothing was finished",
            missing.len(),
            tasks.count,
            sink.describe()
        )));
    }
    let first = &found[0];
    let job = resume::Job {
        command: "pack",
        verb: "packed",
        kind: ManifestKind::Pack,
        is_own: &|_| false,
    };
    for record in &found {
        if record.fingerprint != first.fingerprint {
            let diff = resume::difference(&first.manifest, &record.manifest, &job);
            return Err(Error::Task(format!(
                "task {} was run with other options or input than task {} ({}): every task of one run needs the same command; run the odd one again with the others' options",
                record.index,
                first.index,
                if diff.is_empty() {
                    "another shardsmith version".to_string()
                } else {
                    diff
                }
            )));
        }
    }
    if resume::run_fingerprint(sink)?.as_deref() != Some(first.fingerprint.as_str()) {
        return Err(Error::Task(format!(
            "`{}` holds the start of another run than its tasks recorded; run the tasks again",
            sink.describe()
        )));
    }
    let mut next = 0;
    for record in &found {
        if record.plans.start != next
            || record.total_plans != first.total_plans
            || record.records.len() != record.plans.len()
        {
            return Err(Error::Task(format!(
                "task {} wrote plans {}..{} of {}, which does not follow on from the task before it (plans up to {next}): the tasks did not plan alike; run them again",
                record.index, record.plans.start, record.plans.end, record.total_plans
            )));
        }
        next = record.plans.end;
    }
    if next != first.total_plans {
        return Err(Error::Task(format!(
            "the tasks wrote plans up to {next} of {}",
            first.total_plans
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
        });
    }
    let found = records(sink)?;
    let count = found.len() as u32;
    // `SLURM_ARRAY_TASK_ID=3, ...` and `--task-index 3 ...` told by what was read.
    let mut sources: Vec<String> = found
        .iter()
        .map(|r| r.source.split(['=', ' ']).next().unwrap_or_default().to_string())
        .collect();
    sources.sort();
    sources.dedup();
    let first = &found[0];
    let mut manifest = first.manifest.clone();
    let format_state = first.format_state.clone();
    let kind = manifest
        .format
        .as_deref()
        .and_then(FormatKind::from_name)
        .ok_or_else(|| {
            Error::Task(format!(
                "the tasks name no known format ({:?})",
                manifest.format
            ))
        })?;

    let planned: Vec<String> = found
        .iter()
        .flat_map(|r| r.records.iter().map(|p| p.planned.clone()))
        .collect();
    let present: BTreeSet<String> = sink.list()?.into_iter().collect();
    let mut skipped: Vec<Skipped> = std::mem::take(&mut manifest.skipped);
    let mut shards: Vec<(FileEntry, Value)> = Vec::new();
    let mut renamed = 0;
    for record in &found {
        for plan in &record.records {
            skipped.extend(plan.skipped.iter().cloned());
            let Some(shard) = &plan.shard else { continue };
            let mut entry = shard.entry.clone();
            let target = &planned[shards.len()];
            if &entry.path != target {
                // A re-run of an interrupted merge finds it moved already.
                if present.contains(&entry.path) {
                    sink.rename(&entry.path, target)?;
                } else if !present.contains(target) {
                    return Err(missing(sink, &entry.path, record.index));
                }
                entry.path.clone_from(target);
                renamed += 1;
            } else if !present.contains(&entry.path) {
                return Err(missing(sink, &entry.path, record.index));
            }
            shards.push((entry, shard.facts.clone()));
        }
    }
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
        .map_err(Error::Finish)?;
    manifest.files = shards.into_iter().map(|(entry, _)| entry).collect();
    for file in extra {
        manifest.files.push(shardsmith_store::finish::write_entry(
            sink,
            &file.name,
            &file.bytes,
        )?);
    }
    skipped.sort();
    manifest.skipped = skipped;
    shardsmith_store::finish::seal(sink, &mut manifest)?;
    // What killed tasks left: temporary files and the locks of their indices. Every task
    // has finished by now.
    for entry in sink.list()? {
        if entry.starts_with(&format!("{TEMP_PREFIX}tmp-"))
            || entry.starts_with(&format!("{TEMP_PREFIX}lock-task-"))
        {
            sink.remove(&entry)?;
        }
    }
    Ok(FinishReport {
        manifest,
        tasks: count,
        sources,
        renamed,
    })
}

fn missing(sink: &dyn OutputSink, path: &str, task: u32) -> Error {
    Error::Task(format!(
        "shard `{}/{path}`, written by task {task}, is missing: run task {task} again (it rewrites what is gone), then merge again",
        sink.describe()
    ))
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn indices_read_as_slurm_takes_them() {
        assert_eq!(ranges(&[1]), "1");
        assert_eq!(ranges(&[1, 2]), "1,2");
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8, 9, 10]), "1-3,5,7-10");
    }
}
