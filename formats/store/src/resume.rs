//! Resume state of a run that writes a dataset (`pack`, `tokenize`) and the rules for an
//! output directory that is not empty. Shared by the commands so that each keeps the same
//! promises: a re-run of the same command resumes, a finished one does nothing, a
//! different dataset or foreign files are refused unless `--force`.
//!
//! While a run is under way the output holds `.shardsmith-state/run.json` (the run's
//! fingerprint: tool version, format, options, input listing) and, for every finished
//! shard, `.shardsmith-state/NAME.json` with its record (`pack` names records by plan,
//! `plan-NNNNNN.json`, since a plan's shard number is decided when it is committed). The
//! record is written before the shard is renamed into place, so a shard visible under its
//! final name always has one. A re-run with the same fingerprint keeps those shards and writes the rest; the
//! manifest comes last, then the state is removed.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shardsmith_manifest::{MANIFEST_FILE, Manifest, ManifestKind, SUMS_FILE, TEMP_PREFIX};

use crate::sink::OutputSink;
use crate::{Error, Result};

/// Directory holding the resume state inside the output.
pub use shardsmith_manifest::unfinished::STATE_DIR;

/// `run.json`: the fingerprint decides whether a re-run resumes; the command, format and
/// options name the run in `verify`'s finding and what another run changed (files of
/// older versions hold the fingerprint only).
#[derive(Serialize, Deserialize)]
struct RunState {
    fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    options: Option<BTreeMap<String, serde_json::Value>>,
}

impl RunState {
    fn new(fingerprint: &str, job: &Job<'_>, candidate: &Manifest) -> Self {
        Self {
            fingerprint: fingerprint.to_string(),
            command: Some(job.command.to_string()),
            format: candidate.format.clone(),
            options: Some(candidate.options.clone()),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Sidecar<R> {
    fingerprint: String,
    plan: String,
    record: R,
}

/// What kind of run is preparing its output, for the rules and the messages.
pub struct Job<'a> {
    /// The command (`pack`, `tokenize`).
    pub command: &'a str,
    /// How its output is described (`packed`, `tokenized`).
    pub verb: &'a str,
    /// The manifest kind it writes.
    pub kind: ManifestKind,
    /// True for the names of the files this command and its settings write.
    pub is_own: &'a dyn Fn(&str) -> bool,
}

/// How a run starts.
pub enum Start {
    /// Nothing usable there: write every shard.
    Fresh,
    /// An interrupted run of the same command: keep its finished shards.
    Resume,
    /// The same dataset is already complete.
    Complete(Box<Manifest>),
}

/// The run's fingerprint file inside the output.
pub fn run_file() -> String {
    format!("{STATE_DIR}/run.json")
}

fn sidecar_file(name: &str) -> String {
    format!("{STATE_DIR}/{name}.json")
}

fn json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("state always serializes")
}

/// What differs between an existing manifest and this run, in words (empty when
/// nothing does).
pub fn difference(old: &Manifest, new: &Manifest, job: &Job<'_>) -> String {
    let mut parts = Vec::new();
    if old.kind != job.kind {
        let what = match old.kind {
            ManifestKind::Directory => "a `shardsmith manifest` of existing files".to_string(),
            other => format!("the output of another command ({other:?})").to_lowercase(),
        };
        parts.push(format!("it is {what}, not a {} output", job.command));
    }
    // Named as the flags a user types, only those that differ: another format (or
    // tokenizer) changes the options that follow from it, which are not named again.
    if old.format != new.format {
        parts.push(format!(
            "`--format {}` vs `--format {}`",
            old.format.as_deref().unwrap_or("none"),
            new.format.as_deref().unwrap_or("none")
        ));
    } else {
        let tokenizer = old.options.get("tokenizer") != new.options.get("tokenizer");
        let keys: std::collections::BTreeSet<&String> =
            old.options.keys().chain(new.options.keys()).collect();
        for key in keys {
            let (a, b) = (old.options.get(key), new.options.get(key));
            let eod = old.options.get("eod") != new.options.get("eod");
            // The id follows from the token, and the token from --no-eod.
            let derived = key == "eod_id"
                || (eod && key == "eod_token")
                || (tokenizer && matches!(key.as_str(), "vocab_size" | "dtype"));
            let unset = |v: Option<&serde_json::Value>| v.is_none_or(serde_json::Value::is_null);
            if a == b
                || (unset(a) && unset(b))
                || derived
                || (key == "row_group_rows"
                    && old.options.get("row_group_bytes") != new.options.get("row_group_bytes"))
            {
                continue;
            }
            parts.push(format!(
                "{} vs {}",
                crate::flags::flag(key, a),
                crate::flags::flag(key, b)
            ));
        }
    }
    if old.input != new.input {
        parts.push("the input files differ".into());
    }
    parts.join(", ")
}

/// Decides how to start in the output and cleans what must go. `candidate` is the
/// manifest this run would write, without files.
pub fn prepare(
    sink: &dyn OutputSink,
    job: &Job<'_>,
    candidate: &Manifest,
    fingerprint: &str,
    force: bool,
) -> Result<Start> {
    let entries = sink.list()?;
    // Another tool's `manifest.json` is a foreign file like any other.
    let manifest = sink.read(MANIFEST_FILE)?.filter(|bytes| {
        !matches!(
            Manifest::parse(bytes, MANIFEST_FILE.as_ref()),
            Err(shardsmith_manifest::Error::ForeignManifest { .. })
        )
    });
    let found = if let Some(bytes) = manifest {
        over_dataset(sink, job, candidate, force, &bytes)?
    } else if let Some(bytes) = sink.read(&run_file())? {
        over_run(sink, job, candidate, fingerprint, force, &entries, &bytes)?
    } else {
        over_other_files(sink, job, force, &entries)?;
        Found::Replace(Vec::new())
    };
    match found {
        Found::Start(start) => Ok(start),
        Found::Replace(old_files) => {
            start_fresh(sink, job, candidate, fingerprint, &entries, old_files)
        }
    }
}

/// What the output holds decides: start this way now, or start fresh after removing
/// these files of an earlier run.
enum Found {
    Start(Start),
    Replace(Vec<String>),
}

/// The output holds something this run must not overwrite.
fn conflict(sink: &dyn OutputSink, reason: String) -> Error {
    Error::OutputConflict {
        dir: sink.describe(),
        reason,
    }
}

/// Over a dataset (its manifest `bytes`): complete when it is this run's and every file
/// is still there, else refused unless forced.
fn over_dataset(
    sink: &dyn OutputSink,
    job: &Job<'_>,
    candidate: &Manifest,
    force: bool,
    bytes: &[u8],
) -> Result<Found> {
    match Manifest::parse(bytes, MANIFEST_FILE.as_ref()) {
        Ok((old, _)) => {
            let diff = difference(&old, candidate, job);
            if diff.is_empty() {
                for file in &old.files {
                    if sink.size(&file.path)? != Some(file.size) {
                        return Err(conflict(
                            sink,
                            format!(
                                "holds this dataset, complete, but `{}` is missing or changed since; run `shardsmith verify` on it, or run {} again with --force",
                                file.path, job.command
                            ),
                        ));
                    }
                }
                sink.remove(STATE_DIR)?;
                return Ok(Found::Start(Start::Complete(Box::new(old))));
            }
            if !force {
                return Err(conflict(
                    sink,
                    format!(
                        "already holds a dataset {} differently ({diff}); use --force to replace it, or choose another output",
                        job.verb
                    ),
                ));
            }
            Ok(Found::Replace(
                old.files.into_iter().map(|f| f.path).collect(),
            ))
        }
        Err(e) if !force => Err(conflict(
            sink,
            format!("holds a manifest that cannot be read ({e}); use --force to replace it"),
        )),
        Err(_) => Ok(Found::Replace(Vec::new())),
    }
}

/// Over an unfinished run (its `run.json` `bytes`): resumed when it is this one, else
/// refused unless forced or it committed nothing.
fn over_run(
    sink: &dyn OutputSink,
    job: &Job<'_>,
    candidate: &Manifest,
    fingerprint: &str,
    force: bool,
    entries: &[String],
    bytes: &[u8],
) -> Result<Found> {
    let run = serde_json::from_slice::<RunState>(bytes).ok();
    if run
        .as_ref()
        .is_some_and(|run| run.fingerprint == fingerprint)
    {
        remove_temp(sink, entries)?;
        return Ok(Found::Start(Start::Resume));
    }
    // What the other run finished, under its own names (another prefix, another
    // compression): a run that committed nothing leaves nothing to lose.
    let finished = finished_files(sink)?;
    let committed = !finished.is_empty() || entries.iter().any(|e| (job.is_own)(e));
    if committed && !force {
        let changed = run.map_or_else(String::new, |run| run_difference(&run, candidate, job));
        let changed = if changed.is_empty() {
            String::new()
        } else {
            format!(" ({changed})")
        };
        return Err(conflict(
            sink,
            format!(
                "holds an unfinished {} run with other options or input{changed}; re-run that command to finish it, or use --force to start over (which deletes the {} file(s) it finished)",
                job.command,
                finished.len()
            ),
        ));
    }
    Ok(Found::Replace(finished))
}

/// Over neither a dataset nor a run: foreign files are refused even with --force, files
/// named like this run's without it.
fn over_other_files(
    sink: &dyn OutputSink,
    job: &Job<'_>,
    force: bool,
    entries: &[String],
) -> Result<()> {
    let present: Vec<&String> = entries
        .iter()
        .filter(|e| !e.starts_with(TEMP_PREFIX))
        .collect();
    let shown = |names: &[&String]| {
        let mut shown: Vec<String> = names.iter().take(3).map(|e| format!("`{e}`")).collect();
        if names.len() > 3 {
            shown.push("...".into());
        }
        shown.join(", ")
    };
    // Files of no shardsmith run: a dataset written among them would fail `verify`
    // (they are not in its manifest), so even --force does not write there.
    let foreign: Vec<&String> = present
        .iter()
        .copied()
        .filter(|e| !(job.is_own)(e) && *e != MANIFEST_FILE && *e != SUMS_FILE)
        .collect();
    if !foreign.is_empty() {
        return Err(conflict(
            sink,
            format!(
                "is not empty and holds no shardsmith dataset (found {}): a dataset written among other files would fail `verify`, as they are not in its manifest; choose an empty or new directory, or move those files out{}",
                shown(&foreign),
                if force {
                    " (--force replaces only shardsmith's own files)"
                } else {
                    ""
                }
            ),
        ));
    }
    if !present.is_empty() && !force {
        return Err(conflict(
            sink,
            format!(
                "holds files named like this run's (found {}) but no manifest or run state; use --force to replace them, or choose an empty directory",
                shown(&present)
            ),
        ));
    }
    Ok(())
}

/// A fresh start: what a previous run of ours left removed (never foreign files), then
/// this run's state written.
fn start_fresh(
    sink: &dyn OutputSink,
    job: &Job<'_>,
    candidate: &Manifest,
    fingerprint: &str,
    entries: &[String],
    old_files: Vec<String>,
) -> Result<Start> {
    // Fresh start: remove what a previous run of ours left, never foreign files.
    for name in old_files {
        sink.remove(&name)?;
    }
    for entry in entries {
        if entry == MANIFEST_FILE || entry == SUMS_FILE || (job.is_own)(entry) {
            sink.remove(entry)?;
        }
    }
    sink.remove(STATE_DIR)?;
    remove_temp(sink, entries)?;
    sink.write_atomic(
        &run_file(),
        &json(&RunState::new(fingerprint, job, candidate)),
    )?;
    Ok(Start::Fresh)
}

/// What differs between the unfinished run recorded in `run.json` and this one, in
/// words (empty when the record does not say: a run of an older version).
fn run_difference(run: &RunState, candidate: &Manifest, job: &Job<'_>) -> String {
    let (Some(format), Some(options)) = (&run.format, &run.options) else {
        return String::new();
    };
    let mut old = candidate.clone();
    old.format = Some(format.clone());
    old.options = options.clone();
    old.input = None;
    let mut new = candidate.clone();
    new.input = None;
    let diff = difference(&old, &new, job);
    if diff.is_empty() {
        "the input files differ".into()
    } else {
        diff
    }
}

/// The files the run whose state the output holds recorded as finished (each record
/// holds the manifest entries of what it committed), that are there.
pub fn finished_files(sink: &dyn OutputSink) -> Result<Vec<String>> {
    let state = sink.child(STATE_DIR)?;
    let mut out = std::collections::BTreeSet::new();
    for name in state.list()? {
        if !name.ends_with(".json") || name == "run.json" {
            continue;
        }
        let Some(bytes) = state.read(&name)? else {
            continue;
        };
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            entry_paths(&value, &mut out);
        }
    }
    let mut present = Vec::new();
    for path in out {
        if sink.size(&path)?.is_some() {
            present.push(path);
        }
    }
    Ok(present)
}

/// The `path` of every manifest entry (an object with `path`, `size` and `sha256`)
/// inside `value`.
fn entry_paths(value: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if let (Some(serde_json::Value::String(path)), true, true) = (
                map.get("path"),
                map.contains_key("size"),
                map.contains_key("sha256"),
            ) && !path.starts_with(TEMP_PREFIX)
                && !path.contains("..")
            {
                out.insert(path.clone());
            }
            map.values().for_each(|v| entry_paths(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| entry_paths(v, out)),
        _ => {}
    }
}

/// Removes what earlier runs left behind; this process's own scratch files stay.
fn remove_temp(sink: &dyn OutputSink, entries: &[String]) -> Result<()> {
    let mine = shardsmith_manifest::scratch_prefix();
    for entry in entries {
        if entry.starts_with(TEMP_PREFIX)
            && entry != STATE_DIR
            && !entry.ends_with("lock")
            && !entry.starts_with(&mine)
        {
            sink.remove(entry)?;
        }
    }
    Ok(())
}

/// The record saved for `name` by this run, if any (callers check the file itself).
pub fn load_done<R: DeserializeOwned>(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    name: &str,
) -> Result<Option<R>> {
    let Some(bytes) = sink.read(&sidecar_file(name))? else {
        return Ok(None);
    };
    let Ok(sidecar) = serde_json::from_slice::<Sidecar<R>>(&bytes) else {
        return Ok(None);
    };
    if sidecar.fingerprint != fingerprint || sidecar.plan != plan {
        return Ok(None);
    }
    Ok(Some(sidecar.record))
}

/// Records `name` as finished; call before committing it.
pub fn save_done<R: Serialize>(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    name: &str,
    record: &R,
) -> Result<()> {
    let sidecar = Sidecar {
        fingerprint: fingerprint.to_string(),
        plan: plan.to_string(),
        record,
    };
    sink.write_atomic(&sidecar_file(name), &json(&sidecar))
}

/// Identifies a run, so that a re-run resumes only the same run: the tool version,
/// format, options and input listing of its manifest, and `command` where given
/// (`tokenize`'s runs name theirs). The one formula for every producer.
pub fn fingerprint(manifest: &Manifest, command: Option<&str>) -> String {
    let mut value = serde_json::json!({
        "tool_version": manifest.tool_version,
        "format": manifest.format,
        "options": manifest.options,
        "input": manifest.input,
    });
    if let Some(command) = command {
        value["kind"] = command.into();
    }
    let mut out = Vec::new();
    shardsmith_manifest::canonical_json(&value, &mut out);
    shardsmith_manifest::sha256_hex(&out)
}

/// The fingerprint of the run under way in the output (`run.json`), if any; an
/// unreadable file reads as a fingerprint no run has.
pub fn run_fingerprint(sink: &dyn OutputSink) -> Result<Option<String>> {
    Ok(sink.read(&run_file())?.map(|bytes| {
        serde_json::from_slice::<RunState>(&bytes).map_or_else(|_| String::new(), |r| r.fingerprint)
    }))
}

/// Records that a run with `fingerprint` is under way in the output.
pub fn start_run(
    sink: &dyn OutputSink,
    fingerprint: &str,
    job: &Job<'_>,
    candidate: &Manifest,
) -> Result<()> {
    sink.write_atomic(
        &run_file(),
        &json(&RunState::new(fingerprint, job, candidate)),
    )
}

/// After a failed run: when the output holds no file of ours (nothing was committed, now
/// or by an earlier attempt), the run state goes too, so the output is as it was and a
/// later run with any options may use it. Otherwise the state stays, and the same
/// command resumes. Best effort: the run's own error is what gets reported.
pub fn abandon(sink: &dyn OutputSink, is_own: &dyn Fn(&str) -> bool) {
    if let Ok(entries) = sink.list()
        && !entries.iter().any(|e| is_own(e))
    {
        let _ = sink.remove(STATE_DIR);
    }
}

/// Removes the resume state once the manifest is written.
pub fn clear(sink: &dyn OutputSink) -> Result<()> {
    sink.remove(STATE_DIR)
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
