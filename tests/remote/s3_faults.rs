//! Object storage when things go wrong: a run killed during a multipart upload, a stage
//! killed half way, the server killed and restarted, a server that stops answering, bad
//! locations and credentials (and secrets never shown).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::remote::s3::{S3, local_pack};
use crate::util::*;

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn large_shards_go_up_in_parts_and_a_killed_run_resumes_byte_identical() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("big");
    let input = Tree::new();
    for i in 0..24 {
        input.file(&format!("s{i:03}.bin"), noise(i, 1_500_000));
    }
    // 20 MiB shards: three 8 MiB parts each, the last one short.
    let args = ["--shard-size", "20MiB", "-j", "1"];
    let want = local_pack(input.path(), &args);
    let url = "s3://big/wds";
    let pack = [&["pack", input.path().to_str().unwrap(), url][..], &args].concat();
    run_and_kill_when(&pack, &s3.env(), || {
        bucket.join("wds/shard-000000.tar").exists()
    });
    assert!(
        !bucket.join("wds/manifest.json").exists(),
        "killed before the end: no manifest yet"
    );
    let (code, report) =
        s3.json(&[&["pack", input.path().to_str().unwrap(), url][..], &args].concat());
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        snapshot(&bucket.join("wds")),
        want,
        "resumed run == uninterrupted run"
    );
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn bad_locations_and_credentials_are_clear_and_secrets_never_show() {
    let Some(s3) = S3::start() else { return };
    s3.bucket("b");
    let input = corpus(3, 100);
    let o = s3.run(&["pack", input.path().to_str().unwrap(), "ftp://host/x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("unknown scheme `ftp://`"),
        "{}",
        text(&o.stderr)
    );
    let o = s3.run(&["pack", "s3://nosuchbucket/x", "out-never"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // A wrong secret: refused by the server, reported once, the secret never printed.
    let wrong = "WRONG+secret/value=0123456789";
    let o = s3
        .cmd()
        .env("AWS_SECRET_ACCESS_KEY", wrong)
        .args([
            "--retries",
            "1",
            "pack",
            input.path().to_str().unwrap(),
            "s3://b/x",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(all.contains("s3://b/x"), "names the URL: {all}");
    assert!(
        !all.contains(wrong) && !all.contains("WRONG%2Bsecret"),
        "{all}"
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["error"]["kind"], "storage", "{report}");
    // --storage-option overrides the environment and is never printed either.
    let o = s3
        .cmd()
        .args([
            "--storage-option",
            &format!("aws_secret_access_key={wrong}"),
            "--retries",
            "0",
        ])
        .args(["pack", input.path().to_str().unwrap(), "s3://b/y"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o.stderr).contains(wrong), "{}", text(&o.stderr));
    let o = s3.run(&[
        "--storage-option",
        "no_such_option=1",
        "pack",
        input.path().to_str().unwrap(),
        "s3://b/z",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no_such_option"),
        "{}",
        text(&o.stderr)
    );
}

/// True when `dir` holds a manifest whose files are not all there with their sizes: what
/// a reader must never see.
fn manifest_lies(dir: &Path) -> Option<String> {
    let bytes = std::fs::read(dir.join("manifest.json")).ok()?;
    // Still being written by the server: not visible to an S3 reader yet.
    let manifest: Value = serde_json::from_slice(&bytes).ok()?;
    for entry in manifest["files"].as_array()? {
        let path = entry["path"].as_str()?;
        let size = entry["size"].as_u64()?;
        match std::fs::metadata(dir.join(path)) {
            Ok(m) if m.len() == size => {}
            Ok(m) => return Some(format!("{path}: {} bytes, manifest says {size}", m.len())),
            Err(_) => return Some(format!("{path}: missing")),
        }
    }
    None
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_server_killed_mid_upload_and_restarted_never_exposes_a_lying_manifest() {
    let Some(mut s3) = S3::start() else { return };
    let bucket = s3.bucket("faults");
    let input = Tree::new();
    for i in 0..30 {
        input.file(&format!("s{i:03}.bin"), noise(100 + i, 1_000_000));
    }
    let args = ["--shard-size", "12MiB"];
    let want = local_pack(input.path(), &args);
    let out = bucket.join("wds");
    // A poller watches the bucket for the whole test.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let (stop, out) = (stop.clone(), out.clone());
        std::thread::spawn(move || {
            let mut polls = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(lie) = manifest_lies(&out) {
                    return Err(lie);
                }
                polls += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(polls)
        })
    };
    let env = s3.env();
    let pack = || {
        std::process::Command::new(bin())
            .args(
                [
                    &["pack", input.path().to_str().unwrap(), "s3://faults/wds"][..],
                    &args,
                ]
                .concat(),
            )
            .args(["--retries", "3"])
            .envs(env.clone())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let child = pack();
    // Kill the server once the first shard is in place: the next is mid-upload.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out.join("shard-000000.tar").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    s3.kill_and_restart(Duration::from_millis(300));
    let first = child.wait_with_output().unwrap();
    // Retries may carry the run through the restart, or a multipart upload the server
    // forgot fails it (exit 2, the state kept); either way the same command completes.
    eprintln!(
        "first run after the restart: exit {:?}: {}",
        first.status.code(),
        text(&first.stderr).lines().next().unwrap_or("")
    );
    if first.status.code() != Some(0) {
        assert_eq!(first.status.code(), Some(2), "{}", text(&first.stderr));
        assert!(
            !out.join("manifest.json").exists(),
            "a failed run has no manifest"
        );
        let again = pack().wait_with_output().unwrap();
        assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let polls = poller
        .join()
        .unwrap()
        .unwrap_or_else(|lie| panic!("a reader saw: {lie}"));
    assert!(polls > 10, "the poller ran");
    assert_eq!(
        snapshot(&out),
        want,
        "byte-identical to an uninterrupted run"
    );
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_server_that_stops_answering_for_a_while_is_waited_for() {
    let Some(mut s3) = S3::start() else { return };
    let bucket = s3.bucket("pause");
    let input = corpus(200, 40_000);
    let want = local_pack(input.path(), &["--shard-size", "256KiB"]);
    let child = std::process::Command::new(bin())
        .args([
            "pack",
            input.path().to_str().unwrap(),
            "s3://pause/wds",
            "--shard-size",
            "256KiB",
        ])
        .envs(s3.env())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bucket.join("wds/shard-000000.tar").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Connection refused for a second and a half (plus the restart): ten retries wait at
    // least five seconds between them, so the run rides it out.
    s3.kill_and_restart(Duration::from_millis(1500));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(snapshot(&bucket.join("wds")), want);
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_killed_stage_resumes_keeping_what_arrived_verified() {
    let Some(s3) = S3::start() else { return };
    s3.bucket("src");
    let input = Tree::new();
    for i in 0..24 {
        input.file(&format!("s{i:03}.bin"), noise(i, 1_500_000));
    }
    let (code, report) = s3.json(&[
        "pack",
        input.path().to_str().unwrap(),
        "s3://src/wds",
        "--shard-size",
        "2MiB",
    ]);
    assert_eq!(code, 0, "{report}");
    let shards = report["shards"].as_u64().unwrap();
    let dst = Tree::new();
    // One request at a time, so the copy is caught half way.
    let stage = [
        "--io-concurrency",
        "1",
        "stage",
        "s3://src/wds",
        &dst.s("d"),
    ];
    run_and_kill_when(&stage, &s3.env(), || {
        dst.join("d/shard-000001.tar").exists()
    });
    assert!(
        !dst.join("d/manifest.json").exists(),
        "killed before the end: never looks complete"
    );
    let (code, report) = s3.json(&["stage", "s3://src/wds", &dst.s("d")]);
    assert_eq!(code, 0, "{report}");
    let kept = report["files_kept"].as_u64().unwrap();
    assert!(kept >= 2 && kept < shards, "{report}");
    assert_eq!(report["files_copied"].as_u64(), Some(shards - kept));
    assert_eq!(
        snapshot(&dst.join("d")),
        snapshot(&s3.bucket("src").join("wds")),
        "resumed stage == the source, nothing left over"
    );
}
