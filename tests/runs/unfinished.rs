//! Runs cut short by Ctrl-C: what they leave is never OK and nothing turns it into a
//! dataset (`verify` exit 1, `manifest` and `stage` refuse), a re-run with other naming
//! options is refused or, with --force, leaves none of the old files to be globbed, and
//! the same command resumes to the bytes of an uninterrupted run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::tokenize::basic::{jsonl, words};
use crate::util::*;

/// Runs the binary with `args`, sends it SIGINT (Ctrl-C) once `until` holds, and
/// returns its exit code (130 when the signal stopped it).
fn interrupt_when(args: &[&str], until: impl Fn() -> bool) -> Option<i32> {
    let mut child = Command::new(bin())
        .args(args)
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !until() && Instant::now() <= deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_micros(200));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap().code()
}

/// Files in `dir` whose names end in `suffix`, shardsmith's temporary files left out.
fn count(dir: &Path, suffix: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.ends_with(suffix) && !name.starts_with(".shardsmith-")
        })
        .count()
    })
}

fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The one finding of an unfinished run, checked exactly, and that nothing else of its
/// state is reported file by file.
fn assert_unfinished(report: &Value, command: &str, finished: usize) {
    let found = report["findings"].as_array().unwrap();
    let unfinished: Vec<&Value> = found
        .iter()
        .filter(|f| f["kind"] == "unfinished_run")
        .collect();
    assert_eq!(unfinished.len(), 1, "{report}");
    assert_eq!(unfinished[0]["severity"], "error");
    assert_eq!(unfinished[0]["path"], ".shardsmith-state");
    assert_eq!(
        unfinished[0]["message"],
        format!(
            "an unfinished `{command}` run ({finished} file(s) recorded as finished, no manifest.json): the data here is part of a dataset; re-run the same `shardsmith {command}` command to finish it (it keeps the finished files and writes the rest); or delete it all and start over"
        )
    );
    assert!(
        !found.iter().any(|f| f["kind"] == "leftover_temp_file"),
        "the state is one finding, not one per file: {report}"
    );
    assert!(
        !report.to_string().contains("shardsmith manifest"),
        "nothing suggests blessing part of a dataset: {report}"
    );
}

#[test]
fn an_interrupted_pack_is_never_ok_and_resumes_byte_identical() {
    let input = Tree::new();
    for i in 0..320u64 {
        input.file(&format!("s{i:04}.bin"), noise(i, 250_000));
        input.file(&format!("s{i:04}.txt"), format!("caption {i}"));
    }
    let args = ["--shard-size", "1MiB", "-j", "1"];
    let want = Tree::new();
    let o = run(&[
        &["pack", input.path().to_str().unwrap(), &want.s("out")][..],
        &args,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let want = snapshot(&want.join("out"));

    let t = Tree::new();
    let out = t.join("out");
    let out_s = t.s("out");
    let pack = [&["pack", input.path().to_str().unwrap(), &out_s][..], &args].concat();
    let code = interrupt_when(&pack, || count(&out, ".tar") >= 4);
    assert_eq!(code, Some(130), "stopped by SIGINT, not finished");
    assert!(!out.join("manifest.json").exists());
    // A record is saved before its shard is renamed into place: the shard in flight
    // may have one and no file (a resume checks the file).
    let finished = count(&out.join(".shardsmith-state"), ".json") - 1;
    let shards = count(&out, ".tar");
    assert!(
        shards >= 4 && finished >= shards && finished <= shards + 1,
        "{finished} {shards}"
    );

    // verify: exit 1, one finding naming the run and how to finish it.
    let (code, report) = run_json(&["verify", &out_s]);
    assert_eq!(code, 1, "{report}");
    assert_unfinished(&report, "pack", finished);
    let o = run(&["verify", &out_s]);
    assert!(
        text(&o.stdout)
            .contains("error: .shardsmith-state: unfinished_run: an unfinished `pack` run"),
        "{}",
        text(&o.stdout)
    );

    // manifest and stage refuse it, exit 2, kind unfinished_run.
    let (code, report) = run_json(&["manifest", &out_s]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "unfinished_run", "{report}");
    assert_eq!(
        report["error"]["message"],
        format!(
            "`{out_s}` holds an unfinished `pack` run ({finished} file(s) recorded as finished, no manifest.json); a manifest of it would pass part of a dataset off as the whole, and the run could no longer resume; re-run the same `shardsmith pack` command to finish it (it keeps the finished files and writes the rest); or delete it all and start over; or add --accept-unfinished to describe the files as they are"
        )
    );
    assert!(!out.join("manifest.json").exists());
    let (code, report) = run_json(&["stage", &out_s, &t.s("copy")]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "unfinished_run", "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a copy of it would pass for the whole dataset; re-run the same `shardsmith pack` command"),
        "{report}"
    );
    assert!(!t.join("copy").join("manifest.json").exists());

    // Another prefix: refused, naming what changed; nothing written or removed.
    let before = names(&out);
    let other = [&pack[..], &["--prefix", "other"]].concat();
    let (code, report) = run_json(&other);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "output_conflict", "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "holds an unfinished pack run with other options or input (`--prefix shard` vs `--prefix other`); re-run that command to finish it, or use --force to start over (which deletes the {shards} file(s) it finished)"
        )),
        "{message}"
    );
    assert_eq!(names(&out), before);

    // The same command resumes and ends byte-identical to an uninterrupted run.
    let (code, report) = run_json(&pack);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["shards_resumed"].as_u64(),
        Some(shards as u64),
        "{report}"
    );
    assert_eq!(snapshot(&out), want, "resumed run == uninterrupted run");
}

#[test]
fn a_forced_run_with_other_names_leaves_no_old_shard_to_glob() {
    let input = Tree::new();
    for i in 0..240u64 {
        input.file(&format!("s{i:04}.bin"), noise(i, 250_000));
    }
    let t = Tree::new();
    let out = t.join("out");
    let out_s = t.s("out");
    let pack = [
        "pack",
        input.path().to_str().unwrap(),
        &out_s,
        "--shard-size",
        "1MiB",
        "-j",
        "1",
    ];
    assert_eq!(
        interrupt_when(&pack, || count(&out, ".tar") >= 3),
        Some(130)
    );
    // gz-compressed shards are other names (`.tar.gz`): refused, then forced.
    let gz = [&pack[..], &["--compression", "gz"]].concat();
    let (code, report) = run_json(&gz);
    assert_eq!(code, 2, "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("(no `--compression` vs `--compression gz:6`)"),
        "{report}"
    );
    let forced = [&gz[..], &["--force"]].concat();
    let (code, report) = run_json(&forced);
    assert_eq!(code, 0, "{report}");
    let left: Vec<String> = names(&out)
        .into_iter()
        .filter(|n| n.ends_with(".tar"))
        .collect();
    assert!(
        left.is_empty(),
        "the interrupted run's shards are gone: {left:?}"
    );
    let (code, report) = run_json(&["verify", &out_s]);
    assert_eq!(code, 0, "{report}");
}

#[test]
fn an_interrupted_tokenize_is_never_ok_and_other_names_are_refused() {
    let t = Tree::new();
    let docs: Vec<String> = (0..6000).map(|i| words(i, 300)).collect();
    t.file("corpus.jsonl", jsonl(&docs));
    let out = t.join("out");
    let out_s = t.s("out");
    let args = [
        "tokenize",
        &t.s("corpus.jsonl"),
        &out_s,
        "-t",
        "gpt2",
        "--format",
        "megatron",
        "--shard-tokens",
        "20k",
        "-j",
        "1",
    ];
    let code = interrupt_when(&args, || count(&out, ".idx") >= 3);
    assert_eq!(code, Some(130), "stopped by SIGINT, not finished");
    let finished = count(&out.join(".shardsmith-state"), ".json") - 1;
    assert!(
        finished >= count(&out, ".idx") && count(&out, ".idx") >= 3,
        "{finished}"
    );
    let (code, report) = run_json(&["verify", &out_s]);
    assert_eq!(code, 1, "{report}");
    assert_unfinished(&report, "tokenize", finished);
    let other = [&args[..], &["--prefix", "other"]].concat();
    let (code, report) = run_json(&other);
    assert_eq!(code, 2, "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("with other options or input (`--prefix "),
        "{report}"
    );
    // --accept-unfinished is the explicit way to describe the files as they are.
    let (code, report) = run_json(&["manifest", &out_s, "--accept-unfinished"]);
    assert_eq!(code, 0, "{report}");
}

#[test]
fn stage_of_a_location_holding_nothing_is_an_error() {
    let t = Tree::new();
    std::fs::create_dir(t.join("empty")).unwrap();
    let (code, report) = run_json(&["stage", &t.s("empty"), &t.s("copy")]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "not_found", "{report}");
    assert_eq!(
        report["error"]["message"],
        format!(
            "`{}` holds no files: nothing to stage; check the bucket, the prefix and the credentials' view of them",
            t.s("empty")
        )
    );
    assert!(!t.join("copy").join("manifest.json").exists());
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_killed_pack_in_a_bucket_is_never_staged_or_described_as_whole() {
    let Some(s3) = crate::remote::s3::S3::start() else {
        return;
    };
    let bucket = s3.bucket("runs");
    let input = Tree::new();
    for i in 0..120u64 {
        input.file(&format!("s{i:04}.bin"), noise(i, 250_000));
    }
    let args = ["--shard-size", "1MiB", "-j", "1"];
    let want = crate::remote::s3::local_pack(input.path(), &args);
    let url = "s3://runs/wds";
    let pack = [&["pack", input.path().to_str().unwrap(), url][..], &args].concat();
    run_and_kill_when(&pack, &s3.env(), || {
        bucket.join("wds/shard-000002.tar").exists()
    });
    assert!(
        !bucket.join("wds/manifest.json").exists(),
        "killed before the end"
    );
    // verify: the run is named (its lease is still there: the process was killed).
    let (code, report) = s3.json(&["verify", url]);
    assert_eq!(code, 1, "{report}");
    let found: Vec<&Value> = report["findings"].as_array().unwrap().iter().collect();
    assert_eq!(found.len(), 1, "{report}");
    assert_eq!(found[0]["kind"], "unfinished_run");
    assert_eq!(
        found[0]["message"],
        "an unfinished `pack` run (its lease still held, no manifest.json): the data here is part of a dataset; re-run the same `shardsmith pack` command to finish it (it keeps the finished files and writes the rest), once the run holding the lease has ended; or delete it all and start over"
    );
    // stage and manifest refuse; nothing is written at the destination.
    let dst = Tree::new();
    let (code, report) = s3.json(&["stage", url, &dst.s("copy")]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "unfinished_run", "{report}");
    assert!(!dst.join("copy/manifest.json").exists());
    let (code, report) = s3.json(&["manifest", url]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "unfinished_run", "{report}");
    assert!(!bucket.join("wds/manifest.json").exists());
    // A prefix with nothing under it is not an empty dataset.
    let (code, report) = s3.json(&["stage", "s3://runs/nothing", &dst.s("none")]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "not_found", "{report}");
    // The same command resumes (the dead run's lease is taken over) to the same bytes.
    let (code, report) = s3.json(&pack);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        snapshot(&bucket.join("wds")),
        want,
        "resumed run == uninterrupted run"
    );
    let (code, report) = s3.json(&["stage", url, &dst.s("copy")]);
    assert_eq!(code, 0, "{report}");
    // A leftover temporary object is reported as a local verify reports it.
    std::fs::write(
        bucket.join("wds/.shardsmith-tmp-shard-000009.tar"),
        b"partial",
    )
    .unwrap();
    let (code, report) = s3.json(&["verify", url]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        findings(&report),
        [(
            "leftover_temp_file".to_string(),
            ".shardsmith-tmp-shard-000009.tar".to_string(),
            None
        )],
        "{report}"
    );
    // A prefix or a bucket that does not exist: exit 2 naming it, not a missing manifest.
    let (code, report) = s3.json(&["verify", "s3://runs/nothing"]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "not_found", "{report}");
    assert_eq!(
        report["error"]["message"],
        "`s3://runs/nothing` holds no files: nothing to verify: the bucket or prefix does not exist, or the credentials cannot list it"
    );
    let (code, report) = s3.json(&["verify", "s3://nosuchbucket/x"]);
    assert_eq!(code, 2, "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(message.contains("nosuchbucket"), "{report}");
    assert_eq!(
        message.matches("s3://nosuchbucket/x").count(),
        1,
        "the location is named once: {report}"
    );
}
