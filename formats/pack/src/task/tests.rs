//! A run split into tasks ends byte-identical to a single run, for every format and any
//! task count; the final step refuses while a task is missing or disagrees.

use std::path::Path;

use super::*;
use crate::tree::FileTree;
use crate::{NoProgress, PackSettings, pack};
use shardsmith_shard::{FormatChoice, FormatKind, FormatOptions};
use shardsmith_store::{LocalDir, LocalTree, OutputSink};

fn corpus(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        // Sizes vary a lot, so shares balanced by bytes differ from shares by count.
        let size = if i % 9 == 0 { 9000 } else { 100 + i * 37 };
        std::fs::write(dir.path().join(format!("{i:04}.bin")), vec![i as u8; size]).unwrap();
        std::fs::write(
            dir.path().join(format!("{i:04}.json")),
            format!("{{\"i\": {i}}}"),
        )
        .unwrap();
    }
    dir
}

fn choice(format: &str, compression: Option<&str>, shard_size: u64) -> FormatChoice {
    let options = FormatOptions {
        shard_size: Some(shard_size),
        compression: compression.map(str::to_string),
        ..FormatOptions::default()
    };
    FormatChoice::new(FormatKind::from_name(format).unwrap(), &options).unwrap()
}

fn pack_into(
    input: &Path,
    out: &Path,
    choice: &FormatChoice,
    settings: &PackSettings,
) -> Result<PackReport> {
    pack(
        &FileTree::new(&LocalTree::new(input)),
        &LocalDir::create(out).unwrap(),
        choice,
        settings,
        &NoProgress,
    )
}

fn task(index: u32, count: u32) -> PackSettings {
    PackSettings {
        task: Some(TaskId {
            index,
            count,
            source: "--task-index".into(),
        }),
        ..PackSettings::default()
    }
}

fn finish_in(out: &Path) -> Result<FinishReport> {
    finish(&LocalDir::create(out).unwrap())
}

/// Every file below `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let rel = entry
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        out.push((rel, std::fs::read(&entry).unwrap()));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn shares_tile_the_plan_and_follow_the_bytes() {
    let plan = |bytes: &[u64]| -> Vec<ShardPlan> {
        bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| ShardPlan {
                index: i,
                samples: i..i + 1,
                bytes: b,
                oversize: false,
            })
            .collect()
    };
    let plans = plan(&[100; 10]);
    let shares: Vec<_> = (0..4).map(|i| share(&plans, i, 4)).collect();
    assert_eq!(shares, [0..2, 2..5, 5..7, 7..10]);
    // One heavy plan: the tasks after it share the rest by bytes, not by count.
    let plans = plan(&[1000, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
    assert_eq!(share(&plans, 0, 2), 0..1);
    assert_eq!(share(&plans, 1, 2), 1..11);
    for count in [1, 2, 3, 7, 64] {
        let mut next = 0;
        for i in 0..count {
            let r = share(&plans, i, count);
            assert_eq!(r.start, next, "task {i} of {count}");
            next = r.end;
        }
        assert_eq!(next, plans.len());
    }
    assert_eq!(share(&[], 0, 3), 0..0);
}

#[test]
fn any_task_count_gives_the_single_runs_bytes_in_every_format() {
    let input = corpus(90);
    for (format, compression) in [
        ("webdataset", None),
        ("webdataset", Some("gz")),
        ("mds", None),
        ("mds", Some("zstd:3")),
        ("parquet", None),
    ] {
        let choice = choice(format, compression, 16 * 1024);
        let single = tempfile::tempdir().unwrap();
        pack_into(
            input.path(),
            single.path(),
            &choice,
            &PackSettings::default(),
        )
        .unwrap();
        let want = snapshot(single.path());
        assert!(want.len() > 8, "{format}: several shards");
        for count in [1, 2, 3, 7, 64] {
            let out = tempfile::tempdir().unwrap();
            // Out of order, as a scheduler starts them.
            for i in (0..count).rev() {
                let report = pack_into(input.path(), out.path(), &choice, &task(i, count)).unwrap();
                assert_eq!(report.task.unwrap().task.index, i);
            }
            assert!(
                !out.path().join("manifest.json").exists(),
                "only merge writes it"
            );
            let done = finish_in(out.path()).unwrap();
            assert_eq!(done.tasks, count);
            assert_eq!(
                snapshot(out.path()),
                want,
                "{format} {compression:?} in {count} tasks"
            );
        }
    }
}

#[test]
fn a_missing_task_is_named_and_nothing_is_finished() {
    let input = corpus(60);
    let choice = choice("webdataset", None, 16 * 1024);
    let out = tempfile::tempdir().unwrap();
    for i in [0, 2, 3, 6] {
        pack_into(input.path(), out.path(), &choice, &task(i, 7)).unwrap();
    }
    let err = finish_in(out.path()).unwrap_err().to_string();
    assert!(err.contains("3 of 7 task(s) have not finished"), "{err}");
    assert!(err.contains("index(es) 1,4,5 "), "{err}");
    assert!(!out.path().join("manifest.json").exists());
    for i in [1, 4, 5] {
        pack_into(input.path(), out.path(), &choice, &task(i, 7)).unwrap();
    }
    finish_in(out.path()).unwrap();
    let single = tempfile::tempdir().unwrap();
    pack_into(
        input.path(),
        single.path(),
        &choice,
        &PackSettings::default(),
    )
    .unwrap();
    assert_eq!(snapshot(out.path()), snapshot(single.path()));
    // A task re-run after the end changes nothing.
    let again = pack_into(input.path(), out.path(), &choice, &task(4, 7)).unwrap();
    assert!(again.already_complete);
    assert_eq!(snapshot(out.path()), snapshot(single.path()));
}

#[test]
fn tasks_with_other_options_or_counts_are_refused() {
    let input = corpus(60);
    let out = tempfile::tempdir().unwrap();
    pack_into(
        input.path(),
        out.path(),
        &choice("webdataset", None, 16 * 1024),
        &task(0, 2),
    )
    .unwrap();
    let err = pack_into(
        input.path(),
        out.path(),
        &choice("webdataset", None, 32 * 1024),
        &task(1, 2),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("split run with other options or input"),
        "{err}"
    );
    // The same options with another task count: refused by the final step.
    pack_into(
        input.path(),
        out.path(),
        &choice("webdataset", None, 16 * 1024),
        &task(1, 3),
    )
    .unwrap();
    let err = finish_in(out.path()).unwrap_err().to_string();
    assert!(
        err.contains("disagree on their count: task 0 was run as one of 2 tasks"),
        "{err}"
    );
}

#[test]
fn a_task_started_twice_at_once_is_found() {
    let input = corpus(60);
    let choice = choice("webdataset", None, 16 * 1024);
    let out = tempfile::tempdir().unwrap();
    let sink = LocalDir::create(out.path()).unwrap();
    // Another run holds task 1's lock.
    let held = sink.lock_named("lock-task-000001").unwrap();
    let err = pack_into(input.path(), out.path(), &choice, &task(1, 2))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("being written by another shardsmith run"),
        "{err}"
    );
    drop(held);
    // Where locks do not reach (two nodes, a file system without flock), the claim does.
    let observer = ClaimStealer {
        sink: &sink,
        bytes: br#"{"host": "other-node", "pid": 7, "nonce": "x"}"#.to_vec(),
    };
    let err = pack(
        &FileTree::new(&LocalTree::new(input.path())),
        &sink,
        &choice,
        &task(1, 2),
        &observer,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("two tasks were given the same index"), "{err}");
    assert!(err.contains("process 7 on host `other-node`"), "{err}");
    assert!(
        !out.path()
            .join(".shardsmith-state/task-000001.json")
            .exists()
    );
}

/// Overwrites task 1's claim as soon as the task has planned, as a second run of the
/// same index starting on another node would.
struct ClaimStealer<'a> {
    sink: &'a LocalDir,
    bytes: Vec<u8>,
}

impl crate::PackObserver for ClaimStealer<'_> {
    fn planned(&self, _samples: u64, _bytes: u64, _shards: usize) {
        self.sink
            .write_atomic(".shardsmith-state/task-000001.claim", &self.bytes)
            .unwrap();
    }
}

#[test]
fn shards_after_an_emptied_plan_are_renumbered_as_a_single_run_numbers_them() {
    use crate::tests::left_out::{SHARD, mislabelled};
    let input = mislabelled();
    let choice = choice("webdataset", None, SHARD);
    let single = tempfile::tempdir().unwrap();
    pack_into(
        input.path(),
        single.path(),
        &choice,
        &PackSettings::default(),
    )
    .unwrap();
    for count in [2, 3, 5] {
        let out = tempfile::tempdir().unwrap();
        for i in 0..count {
            pack_into(input.path(), out.path(), &choice, &task(i, count)).unwrap();
        }
        let done = finish_in(out.path()).unwrap();
        assert!(
            done.renamed > 0,
            "plans 4..=7 are empty: the shards after move down"
        );
        assert_eq!(
            snapshot(out.path()),
            snapshot(single.path()),
            "{count} tasks"
        );
    }
}
