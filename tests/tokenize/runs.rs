//! `shardsmith tokenize` runs that stop or repeat: resume after a kill (byte-identical
//! in every format), reruns of a finished command, refused options, an early error.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::tokenize::basic::{documents, jsonl, words};
use crate::util::*;

#[test]
fn an_early_strict_error_stops_a_long_run_promptly() {
    let t = Tree::new();
    let mut body = String::from("not json\n");
    let doc = jsonl(&[words(3, 2000)]);
    for _ in 0..1500 {
        body.push_str(&doc);
    }
    t.file("c.jsonl", body);
    let mut child = std::process::Command::new(bin())
        .args([
            "tokenize",
            &t.s("c.jsonl"),
            &t.s("o"),
            "-t",
            "gpt2",
            "--strict",
            "-j",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tokenize hung after the writer stopped");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(2));
    assert!(!t.join("o/manifest.json").exists());
}

#[test]
fn reruns_do_nothing_and_other_options_are_refused() {
    let t = Tree::new();
    t.file("c.jsonl", jsonl(&documents()));
    let args = ["tokenize", &t.s("c.jsonl"), &t.s("o"), "-t", "gpt2"];
    assert!(run(&args).status.success());
    let before = snapshot(&t.join("o"));
    let (code, report) = run_json(&args);
    assert_eq!(
        (code, report["already_complete"].as_bool()),
        (0, Some(true))
    );
    assert_eq!(snapshot(&t.join("o")), before);
    let o = run(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("o"),
        "-t",
        "gpt2",
        "--no-eod",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("tokenized differently") && err.contains("(no `--no-eod` vs `--no-eod`)"),
        "{err}"
    );
    let o = run(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("o"),
        "-t",
        "gpt2",
        "--no-eod",
        "--force",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn killed_runs_resume_byte_identical() {
    let t = Tree::new();
    let docs: Vec<String> = (0..3000)
        .map(|i| words(i, 200 + (i as usize * 7919) % 4000))
        .collect();
    t.file("c.jsonl", jsonl(&docs));
    for format in ["nanogpt", "llmc", "megatron"] {
        let args = [
            "tokenize",
            &t.s("c.jsonl"),
            "-t",
            "gpt2",
            "--format",
            format,
            "--shard-tokens",
            "50k",
            "-j",
            "1",
        ];
        let reference = t.join(&format!("{format}-whole"));
        let o = cmd().args(args).arg(&reference).output().unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        let want = snapshot(&reference);
        for (round, shards_before_kill) in [1usize, 5].into_iter().enumerate() {
            let target = t.join(&format!("{format}-killed{round}"));
            let mut child = std::process::Command::new(bin())
                .args(args)
                .arg(&target)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let done = std::fs::read_dir(target.join(".shardsmith-state"))
                    .map(|d| d.count().saturating_sub(1))
                    .unwrap_or(0);
                if done >= shards_before_kill
                    || Instant::now() > deadline
                    || child.try_wait().unwrap().is_some()
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = child.kill();
            let killed = !child.wait().unwrap().success();
            let (code, report) = {
                let o = cmd()
                    .args(args)
                    .arg(&target)
                    .arg("--json")
                    .output()
                    .unwrap();
                (
                    o.status.code(),
                    serde_json::from_slice::<Value>(&o.stdout).unwrap_or(Value::Null),
                )
            };
            assert_eq!(code, Some(0), "{report}");
            if killed {
                eprintln!(
                    "{format} round {round}: killed, resumed {} shard(s)",
                    report["shards_resumed"]
                );
            }
            assert_eq!(
                snapshot(&target),
                want,
                "{format} round {round} (killed: {killed})"
            );
        }
    }
}
