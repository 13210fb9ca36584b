//! `pack` split into tasks that run at once as separate processes (as a scheduler runs
//! them), finished by `merge`: the single run's bytes, on disk and in a bucket; a killed
//! task re-run alone; a missing task named; two tasks given one index caught.

use std::process::{Child, Command, Stdio};

use crate::remote::s3::S3;
use crate::util::*;

/// Starts task `index` of `count` the way a Slurm array starts it: `--task-index auto`
/// and the array's variables.
fn spawn_task(args: &[&str], index: u32, count: u32, envs: &[(&str, String)]) -> Child {
    Command::new(bin())
        .args(args)
        .args(["--task-index", "auto"])
        .env("SLURM_ARRAY_TASK_ID", index.to_string())
        .env("SLURM_ARRAY_TASK_COUNT", count.to_string())
        .env("SLURM_ARRAY_TASK_MIN", "0")
        .env("SLURM_ARRAY_TASK_MAX", (count - 1).to_string())
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn all_tasks(args: &[&str], count: u32, envs: &[(&str, String)]) {
    let children: Vec<Child> = (0..count)
        .map(|i| spawn_task(args, i, count, envs))
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "task {i}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!(
                "task {i} of {count} (from SLURM_ARRAY_TASK_ID={i}, SLURM_ARRAY_TASK_COUNT={count})"
            )),
            "the source is printed: {err}"
        );
        assert!(
            text(&o.stdout).contains("shardsmith merge"),
            "{}",
            text(&o.stdout)
        );
    }
}

#[test]
fn tasks_running_at_once_then_merge_equal_one_process_in_every_format() {
    let input = corpus(300, 6000);
    let t = Tree::new();
    for format in ["webdataset", "mds", "parquet", "hf", "litdata"] {
        let single = t.s(&format!("{format}-single"));
        let common = ["--format", format, "--shard-size", "64KiB"];
        let o = run(&[
            &["pack", input.path().to_str().unwrap(), &single][..],
            &common,
        ]
        .concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
        let split = t.s(&format!("{format}-split"));
        all_tasks(
            &[
                &["pack", input.path().to_str().unwrap(), &split][..],
                &common,
            ]
            .concat(),
            4,
            &[],
        );
        let (code, report) = run_json(&["merge", &split]);
        assert_eq!(code, 0, "{report}");
        assert_eq!(report["tasks"], 4);
        assert_eq!(
            snapshot(t.join(&format!("{format}-split")).as_path()),
            snapshot(t.join(&format!("{format}-single")).as_path()),
            "{format}"
        );
        assert_eq!(run(&["verify", &split]).status.code(), Some(0));
    }
}

#[test]
fn a_killed_task_rerun_alone_resumes_and_merge_names_missing_tasks() {
    let input = corpus(400, 20_000);
    let t = Tree::new();
    let single = t.s("single");
    let common = ["--shard-size", "64KiB", "--jobs", "1"];
    let o = run(&[
        &["pack", input.path().to_str().unwrap(), &single][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let split = t.s("split");
    let args = [
        &["pack", input.path().to_str().unwrap(), &split][..],
        &common,
        &["--task-count", "3"],
    ]
    .concat();
    // Task 1 killed once it has committed a shard or two.
    let task1 = [&args[..], &["--task-index", "1"]].concat();
    let out = t.join("split");
    let killed = run_and_kill_when(&task1, &[], || {
        std::fs::read_dir(&out).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.ends_with(".tar") && !name.starts_with('.')
                })
                .count()
                >= 2
        })
    });
    assert!(killed, "task 1 was killed mid-run");
    for i in ["0", "2"] {
        let o = run(&[&args[..], &["--task-index", i]].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    // Task 1's share is incomplete: nothing is finished, and it is named.
    let o = run(&["merge", &split]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("task index(es) 1 left no record"), "{err}");
    assert!(err.contains("sbatch --array=1"), "{err}");
    assert!(!out.join("manifest.json").exists());
    // Re-run alone: it keeps what it had committed.
    let (code, report) = run_json(&[&args[..], &["--task-index", "1"]].concat());
    assert_eq!(code, 0, "{report}");
    assert!(report["shards_resumed"].as_u64().unwrap() >= 1, "{report}");
    let o = run(&["merge", &split]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(snapshot(&out), snapshot(&t.join("single")));
    // Merging again, or running a task again, changes nothing.
    assert!(run(&["merge", &split]).status.success());
    let o = run(&[&args[..], &["--task-index", "2"]].concat());
    assert!(
        text(&o.stdout).contains("already complete"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(snapshot(&out), snapshot(&t.join("single")));
}

#[test]
fn two_runs_of_one_index_at_once_are_refused_and_odd_options_too() {
    let input = corpus(400, 20_000);
    let t = Tree::new();
    let split = t.s("split");
    let args = [
        "pack",
        input.path().to_str().unwrap(),
        &split,
        "--shard-size",
        "64KiB",
        "--jobs",
        "1",
        "--task-count",
        "2",
        "--task-index",
        "0",
    ];
    let first = Command::new(bin())
        .args(args)
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The second is started once the first has written something.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !t.join("split/.shardsmith-state").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let second = run(&args);
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", text(&first.stderr));
    if !second.status.success() {
        let err = text(&second.stderr);
        assert_eq!(second.status.code(), Some(2));
        assert!(err.contains("lock-task-000000"), "{err}");
    }
    // Another shard size for task 1: refused before it writes anything.
    let mut odd = args;
    odd[4] = "128KiB";
    odd[10] = "1";
    let o = run(&odd);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("split run with other options or input"),
        "{}",
        text(&o.stderr)
    );
    // --force would let one task remove the others' work.
    let o = run(&[&args[..], &["--force"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--force cannot be combined"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn tasks_into_a_bucket_then_merge_equal_one_process_on_disk() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("tasks");
    let input = mds_corpus(120);
    let t = Tree::new();
    let common = [
        "--format",
        "mds",
        "--shard-size",
        "16KiB",
        "--compression",
        "zstd",
    ];
    let o = run(&[
        &["pack", input.path().to_str().unwrap(), &t.s("single")][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    all_tasks(
        &[
            &["pack", input.path().to_str().unwrap(), "s3://tasks/mds"][..],
            &common,
        ]
        .concat(),
        4,
        &s3.env(),
    );
    let (code, report) = s3.json(&["merge", "s3://tasks/mds"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["tasks"], 4);
    assert_eq!(snapshot(&bucket.join("mds")), snapshot(&t.join("single")));
    let (code, report) = s3.json(&["verify", "s3://tasks/mds"]);
    assert_eq!(code, 0, "{report}");
    // tokenize: each task's own run goes to a prefix of the output, then is moved into
    // place by server-side copies.
    let text_input = jsonl_corpus();
    let common = ["-t", "gpt2", "--format", "megatron", "--shard-tokens", "8k"];
    let o = run(&[
        &[
            "tokenize",
            text_input.path().to_str().unwrap(),
            &t.s("tokens"),
        ][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    all_tasks(
        &[
            &[
                "tokenize",
                text_input.path().to_str().unwrap(),
                "s3://tasks/tokens",
            ][..],
            &common,
        ]
        .concat(),
        3,
        &s3.env(),
    );
    let (code, report) = s3.json(&["merge", "s3://tasks/tokens"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        payload(&bucket.join("tokens"), "megatron"),
        payload(&t.join("tokens"), "megatron")
    );
    let names: Vec<String> = snapshot(&bucket.join("tokens")).into_keys().collect();
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "nothing left behind: {names:?}"
    );
    let (code, report) = s3.json(&["verify", "s3://tasks/tokens"]);
    assert_eq!(code, 0, "{report}");
}

/// A few JSONL files of varied documents (one of them gzip'd).
pub fn jsonl_corpus() -> Tree {
    let t = Tree::new();
    let words = ["alpha", "beta", "gamma", "delta", "ünï", "😀", "the", "of"];
    for f in 0..6 {
        let mut text = String::new();
        for i in 0..(80 + f * 40) {
            let n = 1 + (i * 37 + f * 11) % 200;
            let doc: Vec<&str> = (0..n)
                .map(|k| words[(k * 7 + i + f) % words.len()])
                .collect();
            text.push_str(&serde_json::json!({ "text": doc.join(" ") }).to_string());
            text.push('\n');
        }
        if f == 3 {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(text.as_bytes()).unwrap();
            t.file(&format!("part{f}.jsonl.gz"), gz.finish().unwrap());
        } else {
            t.file(&format!("part{f}.jsonl"), text);
        }
    }
    t
}

/// The token payload of every `.bin` in name order, concatenated (llm.c headers cut),
/// and Megatron's document sizes from the `.idx` files, concatenated.
pub fn payload(dir: &std::path::Path, format: &str) -> (Vec<u8>, Vec<u8>) {
    let (mut bins, mut sizes) = (Vec::new(), Vec::new());
    for (name, bytes) in snapshot(dir) {
        if name.ends_with(".bin") {
            let skip = if format == "llmc" { 1024 } else { 0 };
            bins.extend_from_slice(&bytes[skip..]);
        } else if name.ends_with(".idx") {
            let n = u64::from_le_bytes(bytes[18..26].try_into().unwrap()) as usize;
            sizes.extend_from_slice(&bytes[34..34 + 4 * n]);
        }
    }
    (bins, sizes)
}

#[test]
fn tokenize_tasks_give_the_single_runs_documents_and_tokens_in_order() {
    let input = jsonl_corpus();
    let t = Tree::new();
    for format in ["megatron", "nanogpt", "llmc"] {
        let common = ["-t", "gpt2", "--format", format, "--shard-tokens", "8k"];
        let single = t.s(&format!("{format}-single"));
        let (code, one) = run_json(
            &[
                &["tokenize", input.path().to_str().unwrap(), &single][..],
                &common,
            ]
            .concat(),
        );
        assert_eq!(code, 0, "{one}");
        let want = payload(&t.join(&format!("{format}-single")), format);
        assert!(!want.0.is_empty());
        for count in [1u32, 2, 3, 7] {
            let split = t.s(&format!("{format}-{count}"));
            all_tasks(
                &[
                    &["tokenize", input.path().to_str().unwrap(), &split][..],
                    &common,
                ]
                .concat(),
                count,
                &[],
            );
            let (code, report) = run_json(&["merge", &split]);
            assert_eq!(code, 0, "{report}");
            assert_eq!(report["tasks"], count);
            let dir = t.join(&format!("{format}-{count}"));
            assert_eq!(payload(&dir, format), want, "{format} in {count} tasks");
            let m = manifest(&dir);
            let whole = manifest(&t.join(&format!("{format}-single")));
            assert_eq!(m["totals"]["documents"], whole["totals"]["documents"]);
            assert_eq!(m["totals"]["tokens"], whole["totals"]["tokens"]);
            assert_eq!(m["options"], whole["options"]);
            assert_eq!(m["input"], whole["input"]);
            let names: Vec<String> = snapshot(&dir).into_keys().collect();
            assert!(
                names.iter().all(|n| !n.starts_with('.')),
                "nothing left behind: {names:?}"
            );
            let o = run(&["verify", &split]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
        }
    }
}

#[test]
fn a_tokenize_task_missing_is_named_and_force_is_refused() {
    let input = jsonl_corpus();
    let t = Tree::new();
    let split = t.s("split");
    let args = [
        "tokenize",
        input.path().to_str().unwrap(),
        &split,
        "-t",
        "gpt2",
        "--task-count",
        "4",
    ];
    for i in ["0", "1", "3"] {
        let o = run(&[&args[..], &["--task-index", i]].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let o = run(&["merge", &split]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("task index(es) 2 left no record"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&[&args[..], &["--task-index", "2", "--force"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--force cannot be combined"),
        "{}",
        text(&o.stderr)
    );
    // Another tokenizer for the missing task: refused before it writes anything.
    let o = run(&[
        "tokenize",
        input.path().to_str().unwrap(),
        &split,
        "-t",
        "cl100k_base",
        "--task-count",
        "4",
        "--task-index",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("split run with other options or input"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&[&args[..], &["--task-index", "2"]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(run(&["merge", &split]).status.success());
    assert_eq!(run(&["verify", &split]).status.code(), Some(0));
}

#[test]
fn one_big_jsonl_file_is_cut_between_tasks_at_line_starts() {
    let t = Tree::new();
    let mut text = String::new();
    for i in 0..600 {
        if i == 433 {
            text.push_str("{\"text\": \"not closed\n");
            continue;
        }
        let doc = "ünï 😀 word ".repeat(1 + (i * 13) % 90);
        text.push_str(&serde_json::json!({ "text": doc, "i": i }).to_string());
        text.push('\n');
    }
    t.file("in/all.jsonl", &text);
    let common = ["-t", "gpt2", "--format", "nanogpt", "--shard-tokens", "5k"];
    let input = t.s("in");
    let (code, one) = run_json(&[&["tokenize", &input, &t.s("single")][..], &common].concat());
    assert_eq!(code, 0, "{one}");
    let want = payload(&t.join("single"), "nanogpt");
    let whole = manifest(&t.join("single"));
    for count in [2u32, 3, 7, 64] {
        let split = t.s(&format!("split-{count}"));
        all_tasks(
            &[&["tokenize", &input, &split][..], &common].concat(),
            count,
            &[],
        );
        let (code, report) = run_json(&["merge", &split]);
        assert_eq!(code, 0, "{report}");
        let dir = t.join(&format!("split-{count}"));
        assert_eq!(payload(&dir, "nanogpt"), want, "{count} tasks");
        let m = manifest(&dir);
        assert_eq!(m["totals"]["documents"], whole["totals"]["documents"]);
        assert_eq!(m["skipped_total"], 1);
        let reason = m["skipped"][0]["reason"].as_str().unwrap();
        // Line 434 of the whole file; inside a later task's span it is told by byte.
        assert!(
            reason.starts_with("line 434:") || reason.starts_with("the line at byte "),
            "{reason}"
        );
        assert_eq!(run(&["verify", &split]).status.code(), Some(0));
    }
}
