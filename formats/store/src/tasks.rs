//! A run split into tasks (Slurm array tasks, Kubernetes Indexed Job pods) that share
//! one output and never talk to each other, and the final step that joins them. What
//! `pack` and `tokenize` share: which task a process is ([`TaskId`]), its share of
//! weighted work ([`share`]), the rules for the shared output ([`prepare`]), the claim
//! that finds two runs of one index ([`Claim`]), and the task records the final step
//! reads and checks ([`save`], [`load_all`]).
//!
//! While tasks run, the output holds `.shardsmith-state/run.json` (the fingerprint every
//! task computes alike), `tasks.json` (the task count), and per task
//! `task-NNNNNN.claim` (which process runs it) and, once its share is decided,
//! `task-NNNNNN.json` (its record: a [`Head`] and what the command needs to finish).

use std::ops::Range;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shardsmith_manifest::{MANIFEST_FILE, Manifest, TEMP_PREFIX};

use crate::resume::{self, Job, STATE_DIR};
use crate::{Error, OutputSink, Result};

/// One task of a split run: which, of how many, and where that was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskId {
    /// 0-based index of this task.
    pub index: u32,
    /// Number of tasks.
    pub count: u32,
    /// Where the index and count came from (`--task-index 3 --task-count 8`,
    /// `SLURM_ARRAY_TASK_ID=3, SLURM_ARRAY_TASK_COUNT=8`), for messages and the record.
    pub source: String,
}

/// What every task record starts with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Head {
    /// The run's fingerprint (tool version, format, options, whole input).
    pub fingerprint: String,
    /// This task's index, count and where they came from.
    pub index: u32,
    pub count: u32,
    pub source: String,
    /// Who ran it.
    pub host: String,
    pub pid: u32,
    /// The manifest every task of the run would write, without files.
    pub manifest: Manifest,
}

/// What the final step of a split run did.
#[derive(Debug)]
pub struct FinishReport {
    /// The manifest written.
    pub manifest: Manifest,
    /// Tasks joined (0 when the run was finished already).
    pub tasks: u32,
    /// Where the tasks' indices came from ([`sources`]).
    pub sources: Vec<String>,
    /// Files renamed into place.
    pub renamed: usize,
    /// What the user should know though the run was finished (state left behind).
    pub warnings: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Record<R> {
    head: Head,
    body: R,
}

#[derive(Serialize, Deserialize)]
struct Tasks {
    count: u32,
    /// The command the tasks run (`pack`, `tokenize`), for the final step to dispatch.
    command: String,
}

/// Which process runs a task, left in the output when it starts and read again before
/// it records its share.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Claim {
    host: String,
    pid: u32,
    nonce: String,
}

fn tasks_file() -> String {
    format!("{STATE_DIR}/tasks.json")
}

fn record_file(index: u32) -> String {
    format!("{STATE_DIR}/task-{index:06}.json")
}

fn claim_file(index: u32) -> String {
    format!("{STATE_DIR}/task-{index:06}.claim")
}

/// The name of the lock task `index` holds while it runs.
pub fn lock_tag(index: u32) -> String {
    format!("lock-task-{index:06}")
}

/// This host's name, as the kernel has it.
pub fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("task state serializes")
}

/// The items of task `index` of `count` among items of the given weights: a contiguous
/// range whose start lies nearest `index / count` of the total weight. Ranges of
/// consecutive tasks meet, the first starts at 0 and the last ends at the end; a task
/// gets none when there are fewer items than tasks or one item outweighs its share.
pub fn share(weights: &[u64], index: u32, count: u32) -> Range<usize> {
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let boundary = |k: u32| -> usize {
        if k == 0 {
            return 0;
        }
        if k >= count {
            return weights.len();
        }
        let target = total * u128::from(k) / u128::from(count);
        let mut before = 0u128;
        for (i, &w) in weights.iter().enumerate() {
            let after = before + u128::from(w);
            if after > target {
                // Cut before or after this item, whichever lies nearer the target.
                return if target - before <= after - target {
                    i
                } else {
                    i + 1
                };
            }
            before = after;
        }
        weights.len()
    };
    boundary(index)..boundary(index + 1).max(boundary(index))
}

/// Refuses an output a task may not write into and starts the run there if it is the
/// first task; `Some` when the run is already finished there (its manifest).
pub fn prepare(
    sink: &dyn OutputSink,
    job: &Job<'_>,
    candidate: &Manifest,
    fingerprint: &str,
) -> Result<Option<Manifest>> {
    let conflict = |reason: String| Error::OutputConflict {
        dir: sink.describe(),
        reason,
    };
    if let Some(bytes) = sink.read(MANIFEST_FILE)? {
        return match Manifest::parse(&bytes, MANIFEST_FILE.as_ref()) {
            Ok((old, _)) => {
                let diff = resume::difference(&old, candidate, job);
                if diff.is_empty() {
                    Ok(Some(old))
                } else {
                    Err(conflict(format!(
                        "already holds a dataset {} differently ({diff}); a task never replaces one: empty the output or choose another",
                        job.verb
                    )))
                }
            }
            Err(e) => Err(conflict(format!(
                "holds a manifest that cannot be read ({e}); a task never replaces one: empty the output or choose another"
            ))),
        };
    }
    let same_run = |found: Option<String>| -> Result<bool> {
        match found {
            Some(f) if f == fingerprint => Ok(true),
            Some(_) => Err(conflict(
                "holds a split run with other options or input: every task of one run needs the same input and options; finish that run, or empty the output".into(),
            )),
            None => Ok(false),
        }
    };
    if same_run(resume::run_fingerprint(sink)?)? {
        return Ok(None);
    }
    let foreign: Vec<String> = sink
        .list()?
        .into_iter()
        .filter(|e| !e.starts_with(TEMP_PREFIX))
        .collect();
    // Another task may have started the run between the two reads.
    if !foreign.is_empty() && !same_run(resume::run_fingerprint(sink)?)? {
        let shown: Vec<String> = foreign.iter().take(3).map(|e| format!("`{e}`")).collect();
        return Err(conflict(format!(
            "is not empty and holds no run of these tasks (found {}{}); tasks write only into an empty output or one their own run started",
            shown.join(", "),
            if foreign.len() > 3 { ", ..." } else { "" }
        )));
    }
    resume::start_run(sink, fingerprint, job, candidate)?;
    Ok(None)
}

/// Claims `task` of a `command` run for this process and records the run's task count.
pub fn claim(sink: &dyn OutputSink, task: &TaskId, command: &str) -> Result<Claim> {
    let claim = Claim {
        host: host(),
        pid: std::process::id(),
        nonce: format!(
            "{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ),
    };
    sink.write_atomic(&claim_file(task.index), &to_json(&claim))?;
    let tasks = Tasks {
        count: task.count,
        command: command.to_string(),
    };
    sink.write_atomic(&tasks_file(), &to_json(&tasks))?;
    Ok(claim)
}

/// Records task `head`'s share, once its work is done: refused when another process
/// has claimed the index since `claim`, or another run took over the output.
pub fn save<R: Serialize>(
    sink: &dyn OutputSink,
    head: &Head,
    claim: &Claim,
    body: &R,
) -> Result<()> {
    let holder = sink
        .read(&claim_file(head.index))?
        .and_then(|b| serde_json::from_slice::<Claim>(&b).ok());
    if holder.as_ref() != Some(claim) {
        let who = holder.map_or_else(
            || "its claim was removed".to_string(),
            |h| format!("process {} on host `{}` claimed it", h.pid, h.host),
        );
        return Err(Error::Task(format!(
            "task {} of {} was started again while this run of it was under way ({who}): two tasks were given the same index ({}); this run records nothing, the other one finishes the share",
            head.index, head.count, head.source
        )));
    }
    if resume::run_fingerprint(sink)?.as_deref() != Some(head.fingerprint.as_str()) {
        return Err(Error::Task(format!(
            "`{}` was taken over by a run with other options or input while task {} did its share",
            sink.describe(),
            head.index
        )));
    }
    let record = Record {
        head: head.clone(),
        body,
    };
    sink.write_atomic(&record_file(head.index), &to_json(&record))
}

/// The command of the split run under way in `sink` (`pack`, `tokenize`), if one is
/// (at least one task has started).
pub fn split_run(sink: &dyn OutputSink) -> Result<Option<String>> {
    Ok(sink.read(&tasks_file())?.map(|bytes| {
        serde_json::from_slice::<Tasks>(&bytes).map_or_else(|_| String::new(), |t| t.command)
    }))
}

/// Task indices as `sbatch --array` takes them: `1,5,7-9`.
pub fn ranges(indices: &[u32]) -> String {
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

/// Every task's record, in index order; refuses while one is missing, or when they
/// disagree on the count, the input or the options.
pub fn load_all<R: DeserializeOwned>(
    sink: &dyn OutputSink,
    job: &Job<'_>,
) -> Result<Vec<(Head, R)>> {
    let bytes = sink.read(&tasks_file())?.unwrap_or_default();
    let tasks: Tasks = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Task(format!(
            "`{}/{}` cannot be read ({e}); run the tasks again",
            sink.describe(),
            tasks_file()
        ))
    })?;
    let mut found: Vec<(Head, R)> = Vec::new();
    let mut missing = Vec::new();
    for index in 0..tasks.count {
        match sink
            .read(&record_file(index))?
            .and_then(|b| serde_json::from_slice::<Record<R>>(&b).ok())
        {
            Some(record) => found.push((record.head, record.body)),
            None => missing.push(index),
        }
    }
    // A task run with another count says more than the tasks that count leaves missing.
    for (head, _) in &found {
        if head.count != tasks.count {
            return Err(Error::Task(format!(
                "the tasks disagree on their count: task {} was run as one of {} tasks, the task that started last as one of {}; every task of a run needs the same count: run them again with one count",
                head.index, head.count, tasks.count
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
    let first = &found[0].0;
    for (head, _) in &found {
        if head.fingerprint != first.fingerprint {
            let diff = resume::difference(&first.manifest, &head.manifest, job);
            return Err(Error::Task(format!(
                "task {} was run with other options or input than task {} ({}): every task of one run needs the same command; run the odd one again with the others' options",
                head.index,
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
    Ok(found)
}

/// Where the tasks' indices came from (`SLURM_ARRAY_TASK_ID`, `--task-index`), each once.
pub fn sources(heads: &[&Head]) -> Vec<String> {
    let mut sources: Vec<String> = heads
        .iter()
        .map(|h| {
            h.source
                .split(['=', ' '])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    sources.sort();
    sources.dedup();
    sources
}

/// After the manifest: removes what killed tasks left (temporary files, the locks of
/// their indices). Every task has finished by then.
pub fn clean_up(sink: &dyn OutputSink) -> Result<()> {
    for entry in sink.list()? {
        if entry.starts_with(&format!("{TEMP_PREFIX}tmp-"))
            || entry.starts_with(&format!("{TEMP_PREFIX}{}", "lock-task-"))
        {
            sink.remove(&entry)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_read_as_slurm_takes_them() {
        assert_eq!(ranges(&[1]), "1");
        assert_eq!(ranges(&[1, 2]), "1,2");
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8, 9, 10]), "1-3,5,7-10");
    }

    #[test]
    fn shares_tile_and_follow_the_weights() {
        let even = [100; 10];
        let shares: Vec<_> = (0..4).map(|i| share(&even, i, 4)).collect();
        assert_eq!(shares, [0..2, 2..5, 5..7, 7..10]);
        // One heavy item: the tasks after it share the rest by weight, not by count.
        let heavy = [1000, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10];
        assert_eq!(share(&heavy, 0, 2), 0..1);
        assert_eq!(share(&heavy, 1, 2), 1..11);
        for count in [1, 2, 3, 7, 64] {
            let mut next = 0;
            for i in 0..count {
                let r = share(&heavy, i, count);
                assert_eq!(r.start, next, "task {i} of {count}");
                next = r.end;
            }
            assert_eq!(next, heavy.len());
        }
        assert_eq!(share(&[], 0, 3), 0..0);
    }
}
