//! A dataset whose writer has not finished: the one reading of the state a `pack` or
//! `tokenize` run keeps in its output while it runs, shared by `verify` (a finding),
//! `manifest` and `stage` (a refusal), so that nothing ever passes part of a dataset off
//! as the whole.
//!
//! A run writes `.shardsmith-state/run.json` before its first shard and removes the
//! state only after `manifest.json` is committed, so an output holding that state and no
//! manifest is unfinished: killed, failed, or still running. In an object store a run
//! also holds the lease `.shardsmith-lock` while it is alive.

use serde::Deserialize;

use crate::{Finding, FindingKind};

/// Directory holding a run's resume state inside its output.
pub const STATE_DIR: &str = ".shardsmith-state";

/// The lease a run holds on an object store output while it is alive.
pub const LEASE_FILE: &str = ".shardsmith-lock";

/// The run's fingerprint file, relative to the output.
pub const RUN_FILE: &str = ".shardsmith-state/run.json";

/// What `run.json` says beyond the fingerprint (older runs wrote the fingerprint only).
#[derive(Deserialize, Default)]
struct RunFile {
    #[serde(default)]
    command: Option<String>,
}

/// What the state of an unfinished run says about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unfinished {
    /// The command that writes it (`pack`, `tokenize`), when `run.json` says.
    pub command: Option<String>,
    /// Files (tasks, for a split run) the run recorded as finished, when its state
    /// could be listed.
    pub finished: Option<usize>,
    /// A run split into tasks (`tasks.json`): finished by its missing tasks and `merge`.
    pub split: bool,
    /// A lease is held: the run may still be writing.
    pub leased: bool,
}

impl Unfinished {
    /// Reads the state of an output that has no manifest: `names` are the entries under
    /// [`STATE_DIR`] (relative to it; `None` when they could not be listed), `run` the
    /// bytes of [`RUN_FILE`], `leased` whether [`LEASE_FILE`] is there. `None` when
    /// there is no state and no lease.
    pub fn from_state(names: Option<&[String]>, run: Option<&[u8]>, leased: bool) -> Option<Self> {
        if names.is_none_or(<[String]>::is_empty) && run.is_none() && !leased {
            return None;
        }
        let names = names.unwrap_or_default();
        let command = run
            .and_then(|bytes| serde_json::from_slice::<RunFile>(bytes).ok())
            .unwrap_or_default()
            .command;
        let split = names.iter().any(|n| n == "tasks.json");
        let finished = names
            .iter()
            .filter(|n| {
                n.ends_with(".json")
                    && *n != "run.json"
                    && *n != "tasks.json"
                    && !n.starts_with(crate::TEMP_PREFIX)
            })
            .count();
        Some(Self {
            command,
            finished: (!names.is_empty()).then_some(finished),
            split,
            leased,
        })
    }

    /// `an unfinished pack run (8 files recorded as finished, no manifest.json)`.
    pub fn describe(&self) -> String {
        let what = if self.split { "split run" } else { "run" };
        let command = self
            .command
            .as_deref()
            .map_or_else(String::new, |c| format!("`{c}` "));
        let noun = if self.split { "task" } else { "file" };
        let mut parts = Vec::new();
        if let Some(n) = self.finished {
            parts.push(format!("{n} {noun}(s) recorded as finished"));
        }
        if self.leased {
            parts.push("its lease still held".to_string());
        }
        parts.push(format!("no {}", crate::MANIFEST_FILE));
        format!("an unfinished {command}{what} ({})", parts.join(", "))
    }

    /// What to do: finish the run, never bless part of it.
    pub fn how_to_finish(&self) -> String {
        let command = self.command.as_deref().unwrap_or("pack or tokenize");
        let mut text = if self.split {
            format!(
                "run the `shardsmith {command}` tasks that are missing with the same arguments, then `shardsmith merge`"
            )
        } else {
            format!(
                "re-run the same `shardsmith {command}` command to finish it (it keeps the finished files and writes the rest)"
            )
        };
        if self.leased {
            text.push_str(", once the run holding the lease has ended");
        }
        text.push_str("; or delete it all and start over");
        text
    }

    /// The `verify` finding: an error, so that part of a dataset never passes.
    pub fn finding(&self) -> Finding {
        Finding::error(
            FindingKind::UnfinishedRun,
            STATE_DIR,
            format!(
                "{}: the data here is part of a dataset; {}",
                self.describe(),
                self.how_to_finish()
            ),
        )
    }
}

/// The run whose state the local directory `root` holds, when it holds no manifest.
pub fn in_directory(root: &std::path::Path) -> Option<Unfinished> {
    if root.join(crate::MANIFEST_FILE).exists() {
        return None;
    }
    let names: Vec<String> = std::fs::read_dir(root.join(STATE_DIR))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let run = std::fs::metadata(root.join(RUN_FILE))
        .ok()
        .filter(|m| m.len() <= 1 << 20)
        .and_then(|_| std::fs::read(root.join(RUN_FILE)).ok());
    // A live local run holds its lock file locked; a killed one leaves it unlocked.
    let leased = std::fs::File::open(root.join(LEASE_FILE))
        .is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)));
    Unfinished::from_state(Some(&names), run.as_deref(), leased)
}

/// True for the path (relative to the dataset, `/`-separated) of an entry of a run's
/// state or its lease.
pub fn is_state(rel: &str) -> bool {
    rel == LEASE_FILE || rel == STATE_DIR || rel.starts_with(&format!("{STATE_DIR}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_state_of_a_run_names_its_command_and_what_it_finished() {
        assert_eq!(Unfinished::from_state(Some(&[]), None, false), None);
        let run = br#"{"fingerprint": "ab", "command": "pack"}"#;
        let u = Unfinished::from_state(
            Some(&names(&[
                "run.json",
                "plan-000000.json",
                "plan-000001.json",
                ".shardsmith-tmp-x",
            ])),
            Some(run),
            false,
        )
        .unwrap();
        assert_eq!(u.finished, Some(2));
        let f = u.finding();
        assert_eq!(f.kind.name(), "unfinished_run");
        assert_eq!(f.path, ".shardsmith-state");
        assert_eq!(
            f.message,
            "an unfinished `pack` run (2 file(s) recorded as finished, no manifest.json): the data here is part of a dataset; re-run the same `shardsmith pack` command to finish it (it keeps the finished files and writes the rest); or delete it all and start over"
        );
    }

    #[test]
    fn older_state_split_runs_and_leases_are_unfinished_too() {
        let old = Unfinished::from_state(None, Some(br#"{"fingerprint": "ab"}"#), false).unwrap();
        assert_eq!(
            old.describe(),
            "an unfinished run (no manifest.json)",
            "a state that could not be listed gives no count"
        );
        assert_eq!(old.command, None);
        assert!(
            old.how_to_finish()
                .contains("`shardsmith pack or tokenize`")
        );
        let split = Unfinished::from_state(
            Some(&names(&[
                "run.json",
                "tasks.json",
                "task-000000.json",
                "task-000000.claim",
            ])),
            Some(br#"{"fingerprint": "ab", "command": "tokenize"}"#),
            false,
        )
        .unwrap();
        assert!(split.split);
        assert_eq!(split.finished, Some(1));
        assert!(split.how_to_finish().contains("then `shardsmith merge`"));
        let leased = Unfinished::from_state(None, None, true).unwrap();
        assert!(leased.describe().contains("its lease still held"));
        assert!(is_state(".shardsmith-state/run.json") && is_state(LEASE_FILE));
        assert!(!is_state(".shardsmith-tmp-1") && !is_state("shard-000000.tar"));
    }
}
