//! A 4-task array `pack` and a dependent `merge`; a cancelled task resubmitted alone.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

#[test]
#[ignore = "needs root and Slurm: tests/servers/slurm.sh starts a one-node cluster"]
fn a_4_task_array_pack_and_a_dependent_merge_equal_one_process() {
    let Some(slurm) = Slurm::start() else { return };
    let input = corpus(300, 6000);
    let inp = input.path().to_str().unwrap();
    let t = Tree::new();
    let logs = t.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for format in ["webdataset", "mds"] {
        let common = ["--format", format, "--shard-size", "64KiB"];
        let (single, split) = (
            t.s(&format!("{format}-single")),
            t.s(&format!("{format}-split")),
        );
        let o = run(&[&["pack", inp, &single][..], &common].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
        let shards = std::fs::read_dir(&single).unwrap().count();
        assert!(shards >= 10, "{format}: {shards} files, too few to split");
        let task = job(
            "",
            &[
                &["pack", inp, &split][..],
                &common,
                &["--task-index", "auto"],
            ]
            .concat(),
        );
        array_then_merge(&slurm, &task, 4, "", &split, &logs, format);
        assert_same(Path::new(&split), Path::new(&single), format);
    }
}

#[test]
#[ignore = "needs root and Slurm: tests/servers/slurm.sh starts a one-node cluster"]
fn a_cancelled_array_task_resubmitted_alone_changes_nothing_else() {
    let Some(slurm) = Slurm::start() else { return };
    let input = corpus(400, 20_000);
    let inp = input.path().to_str().unwrap();
    let t = Tree::new();
    let logs = t.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let common = ["--shard-size", "64KiB", "--jobs", "1"];
    let (single, split) = (t.s("single"), t.s("split"));
    let o = run(&[&["pack", inp, &single][..], &common].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let pack = [
        &["pack", inp, &split][..],
        &common,
        &["--task-index", "auto"],
    ]
    .concat();
    let output = |name: &str| format!("--output={}/{name}", logs.display());
    // Task 2 hangs until it is cancelled; the others finish.
    let hang = job(
        r#"if [ "$SLURM_ARRAY_TASK_ID" = 2 ]; then sleep 600; fi"#,
        &pack,
    );
    let array = slurm.sbatch(&hang, &["--array=0-3", &output("task-%a.out")]);
    let deadline = Instant::now() + LIMIT;
    loop {
        let q = slurm.queue(&[&array]);
        if q == [(
            format!("{array}_2"),
            "RUNNING".to_string(),
            "None".to_string(),
        )] {
            break;
        }
        assert!(Instant::now() < deadline, "{q:?}\n{}", outputs(&logs));
        std::thread::sleep(Duration::from_millis(100));
    }
    slurm.scancel(&format!("{array}_2"));
    let got = slurm.wait(&[&array], LIMIT);
    let want: Vec<(String, &str)> = (0..4)
        .map(|i| {
            (
                format!("{array}_{i}"),
                if i == 2 { "CANCELLED" } else { "COMPLETED" },
            )
        })
        .collect();
    assert_eq!(got, states(&want), "{}", outputs(&logs));
    // merge names the missing task and finishes nothing.
    let o = run(&["merge", &split]);
    assert_eq!(o.status.code(), Some(2), "{}", failed(&o));
    let err = text(&o.stderr);
    assert!(err.contains("task index(es) 2 left no record"), "{err}");
    assert!(!t.join("split/manifest.json").exists());
    let before = snapshot(&t.join("split"));
    // Resubmitted alone, the index is an array of one: `auto` needs the run's task count.
    let alone = slurm.sbatch(&job("", &pack), &["--array=2", &output("alone-%a.out")]);
    let got = slurm.wait(&[&alone], LIMIT);
    assert_eq!(
        got,
        states(&[(format!("{alone}_2"), "FAILED")]),
        "{}",
        outputs(&logs)
    );
    let out = std::fs::read_to_string(logs.join("alone-2.out")).unwrap();
    assert!(out.contains("give --task-count N"), "{out}");
    assert!(
        snapshot(&t.join("split")) == before,
        "a refused task wrote nothing"
    );
    // With it, the task does its share, and merge makes the single run's bytes.
    let again = [&pack[..], &["--task-count", "4"]].concat();
    let retry = slurm.sbatch(&job("", &again), &["--array=2", &output("retry-%a.out")]);
    let got = slurm.wait(&[&retry], LIMIT);
    assert_eq!(
        got,
        states(&[(format!("{retry}_2"), "COMPLETED")]),
        "{}",
        outputs(&logs)
    );
    let out = std::fs::read_to_string(logs.join("retry-2.out")).unwrap();
    assert!(
        out.contains("task 2 of 4 (from SLURM_ARRAY_TASK_ID=2, --task-count 4)"),
        "{out}"
    );
    let after = snapshot(&t.join("split"));
    for (name, bytes) in &before {
        assert!(
            after.get(name) == Some(bytes),
            "{name} changed or went away"
        );
    }
    let o = run(&["merge", &split]);
    assert!(o.status.success(), "{}", failed(&o));
    assert_same(Path::new(&split), Path::new(&single), "after the retry");
}
