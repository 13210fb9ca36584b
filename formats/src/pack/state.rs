//! Resume state of a `pack` run and the rules for an output directory that is not empty.
//!
//! While a run is under way the output holds `.shardsmith-state/run.json` (the run's
//! fingerprint: tool version, format, options, input listing) and, for every finished
//! shard, `.shardsmith-state/NAME.json` with its record. The record is written before
//! the shard is renamed into place, so a shard visible under its final name always has
//! one. A re-run with the same fingerprint keeps those shards and writes the rest; the
//! manifest comes last, then the state is removed.

use serde::{Deserialize, Serialize};
use shardsmith_manifest::{
    FileEntry, MANIFEST_FILE, Manifest, ManifestKind, SUMS_FILE, Skipped, TEMP_PREFIX,
};

use crate::format::ShardFormat;
use crate::sink::OutputSink;
use crate::{Error, Result};

/// Directory holding the resume state inside the output.
pub const STATE_DIR: &str = ".shardsmith-state";

/// Everything the manifest needs about one written shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// Manifest entry (path, size, digests, samples, keys).
    pub entry: FileEntry,
    /// Inputs left out while writing this shard.
    pub skipped: Vec<Skipped>,
    /// Format-specific facts from the encoder (MDS: the shard's index entry).
    #[serde(default)]
    pub facts: serde_json::Value,
}

#[derive(Serialize, Deserialize)]
struct RunState {
    fingerprint: String,
}

#[derive(Serialize, Deserialize)]
struct Sidecar {
    fingerprint: String,
    plan: String,
    record: ShardRecord,
}

/// How a run starts.
pub(crate) enum Start {
    /// Nothing usable there: write every shard.
    Fresh,
    /// An interrupted run of the same command: keep its finished shards.
    Resume,
    /// The same dataset is already complete.
    Complete(Box<Manifest>),
}

fn run_file() -> String {
    format!("{STATE_DIR}/run.json")
}

fn sidecar_file(name: &str) -> String {
    format!("{STATE_DIR}/{name}.json")
}

fn json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("state always serializes")
}

/// True when `entry` is a shard name this format and prefix produce.
fn is_own_shard(entry: &str, format: &dyn ShardFormat, prefix: &str) -> bool {
    entry
        .split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .filter_map(|run| run.parse::<usize>().ok())
        .any(|n| format.shard_name(prefix, n) == entry)
}

/// What differs between an existing manifest and this run, in words.
fn difference(old: &Manifest, new: &Manifest) -> String {
    let mut parts = Vec::new();
    if old.kind != ManifestKind::Pack {
        parts
            .push("it is a `shardsmith manifest` of existing files, not a pack output".to_string());
    }
    if old.format != new.format {
        parts.push(format!(
            "format {} vs {}",
            old.format.as_deref().unwrap_or("none"),
            new.format.as_deref().unwrap_or("none")
        ));
    }
    let keys: std::collections::BTreeSet<&String> =
        old.options.keys().chain(new.options.keys()).collect();
    for key in keys {
        let (a, b) = (old.options.get(key), new.options.get(key));
        if a != b {
            let show = |v: Option<&serde_json::Value>| {
                v.map_or_else(|| "unset".to_string(), ToString::to_string)
            };
            parts.push(format!("{key} {} vs {}", show(a), show(b)));
        }
    }
    if old.input != new.input {
        parts.push("the input files differ".into());
    }
    parts.join(", ")
}

/// Decides how to start in the output and cleans what must go. `candidate` is the
/// manifest this run would write, without files.
pub(crate) fn prepare(
    sink: &dyn OutputSink,
    candidate: &Manifest,
    fingerprint: &str,
    format: &dyn ShardFormat,
    prefix: &str,
    force: bool,
) -> Result<Start> {
    let conflict = |reason: String| Error::OutputConflict {
        dir: sink.describe(),
        reason,
    };
    let entries = sink.list()?;
    let mut old_files = Vec::new();
    if let Some(bytes) = sink.read(MANIFEST_FILE)? {
        match Manifest::parse(&bytes, MANIFEST_FILE.as_ref()) {
            Ok((old, _)) => {
                let diff = difference(&old, candidate);
                if diff.is_empty() {
                    for file in &old.files {
                        if sink.size(&file.path)? != Some(file.size) {
                            return Err(conflict(format!(
                                "holds this dataset, complete, but `{}` is missing or changed since; run `shardsmith verify` on it, or pack again with --force",
                                file.path
                            )));
                        }
                    }
                    sink.remove(STATE_DIR)?;
                    return Ok(Start::Complete(Box::new(old)));
                }
                if !force {
                    return Err(conflict(format!(
                        "already holds a dataset packed differently ({diff}); use --force to replace it, or choose another output"
                    )));
                }
                old_files = old.files.into_iter().map(|f| f.path).collect();
            }
            Err(e) if !force => {
                return Err(conflict(format!(
                    "holds a manifest that cannot be read ({e}); use --force to replace it"
                )));
            }
            Err(_) => {}
        }
    } else if let Some(bytes) = sink.read(&run_file())? {
        let same = serde_json::from_slice::<RunState>(&bytes)
            .is_ok_and(|run| run.fingerprint == fingerprint);
        if same {
            remove_temp(sink, &entries)?;
            return Ok(Start::Resume);
        }
        if !force {
            return Err(conflict(
                "holds an unfinished pack run with other options or input; re-run that command to finish it, or use --force to start over".into(),
            ));
        }
    } else {
        let foreign: Vec<&String> = entries
            .iter()
            .filter(|e| !e.starts_with(TEMP_PREFIX))
            .collect();
        if !foreign.is_empty() && !force {
            let shown: Vec<String> = foreign.iter().take(3).map(|e| format!("`{e}`")).collect();
            return Err(conflict(format!(
                "is not empty and holds no shardsmith dataset (found {}{}); use --force to write into it anyway, or choose an empty directory",
                shown.join(", "),
                if foreign.len() > 3 { ", ..." } else { "" }
            )));
        }
    }
    // Fresh start: remove what a previous run of ours left, never foreign files.
    for name in old_files {
        sink.remove(&name)?;
    }
    for entry in &entries {
        if entry == MANIFEST_FILE || entry == SUMS_FILE || is_own_shard(entry, format, prefix) {
            sink.remove(entry)?;
        }
    }
    sink.remove(STATE_DIR)?;
    remove_temp(sink, &entries)?;
    sink.write_atomic(
        &run_file(),
        &json(&RunState {
            fingerprint: fingerprint.to_string(),
        }),
    )?;
    Ok(Start::Fresh)
}

fn remove_temp(sink: &dyn OutputSink, entries: &[String]) -> Result<()> {
    for entry in entries {
        if entry.starts_with(TEMP_PREFIX) && entry != STATE_DIR && !entry.ends_with("lock") {
            sink.remove(entry)?;
        }
    }
    Ok(())
}

/// The record of a finished shard of this run, if the shard is there and intact in size.
pub(crate) fn load_done(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    name: &str,
) -> Result<Option<ShardRecord>> {
    let Some(bytes) = sink.read(&sidecar_file(name))? else {
        return Ok(None);
    };
    let Ok(sidecar) = serde_json::from_slice::<Sidecar>(&bytes) else {
        return Ok(None);
    };
    if sidecar.fingerprint != fingerprint
        || sidecar.plan != plan
        || sidecar.record.entry.path != name
    {
        return Ok(None);
    }
    if sink.size(name)? != Some(sidecar.record.entry.size) {
        return Ok(None);
    }
    Ok(Some(sidecar.record))
}

/// Records a shard as finished; call before committing the shard.
pub(crate) fn save_done(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    record: &ShardRecord,
) -> Result<()> {
    let sidecar = Sidecar {
        fingerprint: fingerprint.to_string(),
        plan: plan.to_string(),
        record: record.clone(),
    };
    sink.write_atomic(&sidecar_file(&record.entry.path), &json(&sidecar))
}

/// Removes the resume state once the manifest is written.
pub(crate) fn clear(sink: &dyn OutputSink) -> Result<()> {
    sink.remove(STATE_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webdataset::WebDataset;

    #[test]
    fn own_shards_are_recognised_by_name() {
        assert!(is_own_shard("shard-000012.tar", &WebDataset, "shard"));
        assert!(is_own_shard("a-1-000000.tar", &WebDataset, "a-1"));
        assert!(!is_own_shard("shard-12.tar", &WebDataset, "shard"));
        assert!(!is_own_shard("other-000012.tar", &WebDataset, "shard"));
        assert!(!is_own_shard("notes.txt", &WebDataset, "shard"));
    }
}
