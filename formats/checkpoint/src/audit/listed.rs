//! `audit` of a run directory that is not on the local file system (an object store
//! prefix): the same survey made from a listing. Checkpoint names, pointer files and
//! leftovers of interrupted saves are judged by the same rules as on disk; each
//! checkpoint is then checked by the caller ([`CheckpointCheck`]), which knows how to
//! read it.

use std::collections::BTreeMap;

use shardsmith_manifest::verify::VerifyReport;
use shardsmith_manifest::{Finding, FindingKind, ListedTree, Result, TEMP_PREFIX};

use super::pointers::{POINTER_FILES, Pointer, finish, parse_pointer};
use super::report::{AuditReport, status_of, step_of};
use crate::{is_checkpoint_name, is_temp_leftover};

/// How each checkpoint found in a listed run is verified: the caller knows how to read
/// it (in place against its manifest, or copied to local disk).
pub trait CheckpointCheck: Sync {
    /// Verifies checkpoint `name`: the directory `name/` holding `files` (relative to
    /// it) when `dir`, else the one file `name`. `progress` gets every block read.
    fn check(
        &self,
        name: &str,
        dir: bool,
        files: &[(String, u64)],
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<VerifyReport>;
}

/// What the listing holds at the top of the run directory.
#[derive(Default)]
struct Top {
    /// The size when a file has this name.
    file: Option<u64>,
    /// Files below, when it is a directory: path relative to it, size.
    below: Vec<(String, u64)>,
}

/// A checkpoint found: its name, whether it is a directory, its files with their sizes.
type Candidate = (String, bool, Vec<(String, u64)>);

/// Surveys `run` as [`super::audit_run`] surveys a local directory. Checkpoints are
/// checked one at a time (each check reads its files in parallel), oldest first.
/// `progress_total` receives the bytes of all checkpoints before the first is read.
pub fn audit_listed(
    run: &dyn ListedTree,
    checker: &dyn CheckpointCheck,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AuditReport> {
    let mut tops: BTreeMap<String, Top> = BTreeMap::new();
    for (rel, size) in run.files()? {
        // shardsmith's own leftovers are no part of a checkpoint.
        if rel.split('/').any(|p| p.starts_with(TEMP_PREFIX)) {
            continue;
        }
        match rel.split_once('/') {
            Some((top, below)) => tops
                .entry(top.to_string())
                .or_default()
                .below
                .push((below.to_string(), size)),
            None => tops.entry(rel).or_default().file = Some(size),
        }
    }
    let mut report = AuditReport::default();
    let mut pointers: Vec<Pointer> = Vec::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    for (name, top) in tops {
        if !top.below.is_empty() {
            if is_temp_leftover(&name) {
                report.findings.push(leftover(&name));
            } else if !name.starts_with('.')
                && (step_of(&name).is_some() || has_checkpoint_files(&top.below))
            {
                candidates.push((name.clone(), true, top.below));
            }
        }
        let Some(size) = top.file else { continue };
        if POINTER_FILES.contains(&name.as_str()) {
            pointers.push(parse_pointer(&name, size, &|| run.head(&name, size)));
        } else if is_temp_leftover(&name) {
            report.findings.push(leftover(&name));
        } else if is_checkpoint_name(&name)
            || run
                .head(&name, size.min(4))
                .is_ok_and(|h| h == b"PK\x03\x04")
        {
            candidates.push((name.clone(), false, vec![(String::new(), size)]));
        }
    }
    candidates.sort_by_key(|(name, dir, _)| (step_of(name), name.clone(), *dir));
    progress_total(
        candidates
            .iter()
            .flat_map(|(_, _, files)| files.iter().map(|(_, size)| size))
            .sum(),
    );
    for (name, dir, files) in &candidates {
        let checked = checker.check(name, *dir, files, progress)?;
        report.checkpoints.push(status_of(
            name,
            checked,
            *dir && !has_checkpoint_files(files),
        ));
    }
    Ok(finish(report, &pointers))
}

fn leftover(name: &str) -> Finding {
    Finding::warning(
        FindingKind::LeftoverTempFile,
        name,
        "temporary file or directory of an interrupted save",
    )
}

fn has_checkpoint_files(files: &[(String, u64)]) -> bool {
    files
        .iter()
        .any(|(rel, _)| is_checkpoint_name(rel) && !is_temp_leftover(rel))
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::Mutex;

    use super::*;

    /// A listing in memory; `check` records what it was asked and finds nothing.
    struct Fake {
        files: Vec<(String, Vec<u8>)>,
        checked: Mutex<Vec<(String, bool, usize)>>,
    }

    impl ListedTree for Fake {
        fn display(&self) -> String {
            "mem://run".into()
        }
        fn files(&self) -> Result<Vec<(String, u64)>> {
            Ok(self
                .files
                .iter()
                .map(|(r, b)| (r.clone(), b.len() as u64))
                .collect())
        }
        fn read_small(&self, rel: &str) -> Result<Option<Vec<u8>>> {
            Ok(self
                .files
                .iter()
                .find(|(r, _)| r == rel)
                .map(|(_, b)| b.clone()))
        }
        fn open(&self, rel: &str) -> io::Result<Box<dyn io::Read + Send>> {
            let (_, bytes) = self.files.iter().find(|(r, _)| r == rel).unwrap();
            Ok(Box::new(io::Cursor::new(bytes.clone())))
        }
    }

    impl CheckpointCheck for Fake {
        fn check(
            &self,
            name: &str,
            dir: bool,
            files: &[(String, u64)],
            _progress: &(dyn Fn(u64) + Sync),
        ) -> Result<VerifyReport> {
            self.checked
                .lock()
                .unwrap()
                .push((name.into(), dir, files.len()));
            Ok(VerifyReport::default())
        }
    }

    #[test]
    fn survey_from_a_listing() {
        let file = |r: &str, b: &[u8]| (r.to_string(), b.to_vec());
        let run = Fake {
            files: vec![
                file("global_step10/mp_rank_00_model_states.pt", b"x"),
                file("global_step20/zero_pp_rank_0.pt.tmp", b"x"),
                file("global_step5/mp_rank_00_model_states.pt", b"x"),
                file("latest", b"global_step20\n"),
                file("model", b"PK\x03\x04rest"),
                file("notes.txt", b"hello"),
                file(".tmp123/a.pt", b"x"),
                file("logs/events.txt", b"x"),
                // shardsmith's own leftovers are not surveyed at all.
                file(".shardsmith-tmp-1/global_step30/a.pt", b"x"),
                file("global_step10/.shardsmith-tmp-2.pt", b"x"),
            ],
            checked: Mutex::new(Vec::new()),
        };
        let report = audit_listed(&run, &run, &|_| {}, &|_| {}).unwrap();
        let names: Vec<_> = report.checkpoints.iter().map(|c| c.name.as_str()).collect();
        // Oldest first by step; a sniffed zip without a step sorts first.
        assert_eq!(
            names,
            ["model", "global_step5", "global_step10", "global_step20"]
        );
        // Only leftovers in global_step20: broken, so `latest` points at a broken one.
        let last = &report.checkpoints[3];
        assert!(!last.intact);
        assert_eq!(last.findings[0].kind, FindingKind::IncompleteSave);
        assert_eq!(report.newest_intact.as_deref(), Some("global_step10"));
        let kinds: Vec<_> = report.findings.iter().map(|f| f.kind).collect();
        assert!(kinds.contains(&FindingKind::LeftoverTempFile), "{kinds:?}");
        assert!(kinds.contains(&FindingKind::BadPointer), "{kinds:?}");
        assert!(!report.ok());
        let checked = run.checked.lock().unwrap();
        assert!(checked.contains(&("model".into(), false, 1)));
        assert!(checked.contains(&("global_step10".into(), true, 1)));
    }
}
