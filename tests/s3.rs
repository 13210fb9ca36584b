//! Object storage against a real S3 server: `s3s-fs` (S3 over a directory), started per
//! test on 127.0.0.1 on a free port with an access key pair, stopped after. The server's
//! backing directory is the bucket's content, so what the binary wrote is compared byte
//! for byte with what the same command writes to local disk, and damage is done to it
//! directly. tests/run_all.sh installs the server (cached under $HOME/.cache) and sets
//! SHARDSMITH_S3S_FS.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

const KEY_ID: &str = "AKIDSHARDSMITHTEST";
const SECRET: &str = "s3cr3t+Shardsmith/Test==";

/// A running s3s-fs server over a temporary directory.
pub struct S3 {
    child: Child,
    root: Tree,
    port: u16,
    bin: PathBuf,
}

impl S3 {
    /// Starts the server, or `None` (test not run) when SHARDSMITH_S3S_FS is not set
    /// outside CI.
    pub fn start() -> Option<Self> {
        let bin = match std::env::var_os("SHARDSMITH_S3S_FS") {
            Some(p) => PathBuf::from(p),
            None if std::env::var_os("CI").is_some() => {
                panic!("SHARDSMITH_S3S_FS is not set under CI: the S3 server is missing")
            }
            None => {
                eprintln!("S3 test NOT RUN: set SHARDSMITH_S3S_FS (tests/run_all.sh does)");
                return None;
            }
        };
        let root = Tree::new();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Self::spawn(&bin, root.path(), port);
        Some(Self {
            child,
            root,
            port,
            bin,
        })
    }

    fn spawn(bin: &Path, root: &Path, port: u16) -> Child {
        let child = std::process::Command::new(bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", KEY_ID, "--secret-key", SECRET])
            .arg(root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("s3s-fs starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "s3s-fs did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    /// Kills the server (SIGKILL), waits `down`, and starts it again on the same port
    /// over the same directory.
    pub fn kill_and_restart(&mut self, down: Duration) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::thread::sleep(down);
        self.child = Self::spawn(&self.bin, self.root.path(), self.port);
    }

    /// Creates bucket `name` (a directory of the server's root) and returns its path.
    pub fn bucket(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The binary, configured for this server through the standard AWS variables.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = cmd();
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", KEY_ID.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// Runs the binary with `args` (`--json` added) and returns the exit code and report.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.run(&[args, &["--json"]].concat());
        let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{args:?}: no JSON report\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), report)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Packs `input` with `args` to local disk and returns what was written.
fn local_pack(input: &Path, args: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let out = Tree::new();
    let o = run(&[&["pack", input.to_str().unwrap(), &out.s("d")], args].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    snapshot(&out.join("d"))
}

#[test]
fn pack_to_s3_writes_the_same_bytes_as_to_disk_for_every_format() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("shards");
    let input = mds_corpus(60);
    for (format, extra) in [
        ("webdataset", vec!["--shard-size", "16KiB"]),
        ("mds", vec!["--shard-size", "16KiB"]),
        ("parquet", vec!["--shard-size", "16KiB"]),
    ] {
        let args: Vec<&str> = [&["--format", format][..], &extra].concat();
        let url = format!("s3://shards/{format}");
        let (code, report) =
            s3.json(&[&["pack", input.path().to_str().unwrap(), &url], &args[..]].concat());
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(report["output"], url);
        assert!(
            report["shards"].as_u64().unwrap() > 1,
            "{format}: several shards"
        );
        assert_eq!(
            snapshot(&bucket.join(format)),
            local_pack(input.path(), &args),
            "{format}: the bucket holds exactly what a local run writes (no state left)"
        );
        // The same command again: already complete, nothing rewritten.
        let (code, report) =
            s3.json(&[&["pack", input.path().to_str().unwrap(), &url], &args[..]].concat());
        assert_eq!(code, 0, "{report}");
        assert_eq!(report["already_complete"], true, "{format}: {report}");
    }
}

#[test]
fn pack_reads_from_s3_into_s3_and_into_local_disk() {
    let Some(s3) = S3::start() else { return };
    let raw = s3.bucket("raw");
    let input = corpus(40, 3000);
    copy_dir(input.path(), &raw.join("set"));
    let want = local_pack(input.path(), &["--shard-size", "32KiB"]);
    let (code, report) = s3.json(&[
        "pack",
        "s3://raw/set",
        "s3://raw/out",
        "--shard-size",
        "32KiB",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["input_files"], 120);
    assert_eq!(snapshot(&raw.join("out")), want, "s3 -> s3");
    let local = Tree::new();
    let (code, report) = s3.json(&[
        "pack",
        "s3://raw/set",
        &local.s("d"),
        "--shard-size",
        "32KiB",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(snapshot(&local.join("d")), want, "s3 -> local");
    // Packing a packed dataset again leaves its manifest and SHA256SUMS out.
    let (code, report) = s3.json(&["pack", "s3://raw/out", "s3://raw/again"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["skipped"].as_array().unwrap().len(), 0, "{report}");
}

#[test]
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
    let mut child = std::process::Command::new(bin())
        .args([&["pack", input.path().to_str().unwrap(), url][..], &args].concat())
        .envs(s3.env())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bucket.join("wds/shard-000000.tar").exists()
        && Instant::now() < deadline
        && child.try_wait().unwrap().is_none()
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
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
fn tokenize_reads_jsonl_from_s3_and_writes_every_format_to_s3() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("text");
    std::fs::create_dir_all(bucket.join("in")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/corpus.jsonl"),
        bucket.join("in/corpus.jsonl"),
    )
    .unwrap();
    for format in ["megatron", "nanogpt", "llmc"] {
        let local = Tree::new();
        let o = run(&[
            "tokenize",
            bucket.join("in").to_str().unwrap(),
            &local.s("d"),
            "-t",
            "gpt2",
            "--format",
            format,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let url = format!("s3://text/{format}");
        let (code, report) = s3.json(&[
            "tokenize",
            "s3://text/in",
            &url,
            "-t",
            "gpt2",
            "--format",
            format,
        ]);
        assert_eq!(code, 0, "{format}: {report}");
        let mut got = snapshot(&bucket.join(format));
        let mut want = snapshot(&local.join("d"));
        // The manifest names the input as given (a URL here, a path there).
        let (gm, wm) = (
            got.remove("manifest.json").unwrap(),
            want.remove("manifest.json").unwrap(),
        );
        assert_eq!(got, want, "{format}: token files and SHA256SUMS identical");
        let (gm, wm): (Value, Value) = (
            serde_json::from_slice(&gm).unwrap(),
            serde_json::from_slice(&wm).unwrap(),
        );
        assert_eq!(gm["files"], wm["files"], "{format}");
        assert_eq!(gm["totals"], wm["totals"], "{format}");
    }
}

#[test]
fn stage_verifies_every_object_on_arrival_and_resumes() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("dataset");
    let input = corpus(60, 20_000);
    let (code, report) = s3.json(&[
        "pack",
        input.path().to_str().unwrap(),
        "s3://dataset/wds",
        "--shard-size",
        "64KiB",
    ]);
    assert_eq!(code, 0, "{report}");
    let shards = report["shards"].as_u64().unwrap();
    assert!(shards >= 4, "{report}");
    let packed = snapshot(&bucket.join("wds"));

    // Clean: every file arrives, verified, and `verify` agrees.
    let dst = Tree::new();
    let (code, report) = s3.json(&["stage", "s3://dataset/wds", &dst.s("a")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["complete"], true);
    assert_eq!(report["files_copied"].as_u64(), Some(shards));
    assert_eq!(snapshot(&dst.join("a")), packed);
    assert_eq!(run(&["verify", &dst.s("a")]).status.code(), Some(0));

    // One object damaged in the bucket: that file is not kept, no manifest, exit 1.
    let victim = bucket.join("wds/shard-000002.tar");
    let good = std::fs::read(&victim).unwrap();
    let mut bad = good.clone();
    let at = 70_000 % bad.len();
    bad[at] ^= 0x40;
    std::fs::write(&victim, &bad).unwrap();
    let (code, report) = s3.json(&["stage", "s3://dataset/wds", &dst.s("b")]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["complete"], false);
    let mismatches = report["mismatches"].as_array().unwrap();
    assert_eq!(mismatches.len(), 1, "{report}");
    assert_eq!(mismatches[0]["path"], "shard-000002.tar");
    assert!(
        mismatches[0]["bytes"].is_array(),
        "the chunk CRCs narrow it: {report}"
    );
    assert!(
        !dst.join("b/shard-000002.tar").exists(),
        "the bad copy is not kept"
    );
    assert!(
        !dst.join("b/manifest.json").exists(),
        "never looks complete"
    );
    assert_eq!(
        std::fs::read(dst.join("b/shard-000000.tar")).unwrap(),
        packed["shard-000000.tar"],
        "the good files are there"
    );

    // Repaired, the same command resumes: only the missing file is copied.
    std::fs::write(&victim, &good).unwrap();
    let (code, report) = s3.json(&["stage", "s3://dataset/wds", &dst.s("b")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["files_copied"], 1, "{report}");
    assert_eq!(report["files_kept"].as_u64(), Some(shards - 1));
    assert_eq!(snapshot(&dst.join("b")), packed);

    // A local dataset published to a bucket, and a directory without a manifest.
    let (code, report) = s3.json(&["stage", &dst.s("b"), "s3://dataset/published"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(snapshot(&bucket.join("published")), packed);
    let (code, report) = s3.json(&["stage", input.path().to_str().unwrap(), "s3://dataset/raw"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["had_manifest"], false);
    let staged = Tree::new();
    let (code, report) = s3.json(&["stage", "s3://dataset/raw", &staged.s("r")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["had_manifest"], true,
        "the manifest stage wrote is used"
    );
    let mut copied = snapshot(&staged.join("r"));
    copied.remove("manifest.json");
    copied.remove("SHA256SUMS");
    assert_eq!(copied, snapshot(input.path()));
}

#[test]
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
    // Connection refused for a second and a half: requests are retried with backoff.
    s3.kill_and_restart(Duration::from_millis(1500));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(snapshot(&bucket.join("wds")), want);
}

#[test]
fn verify_of_a_bucket_finds_what_verify_of_a_local_copy_finds() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("checked");
    let input = corpus(60, 20_000);
    let (code, report) = s3.json(&[
        "pack",
        input.path().to_str().unwrap(),
        "s3://checked/wds",
        "--shard-size",
        "64KiB",
    ]);
    assert_eq!(code, 0, "{report}");
    let (code, report) = s3.json(&["verify", "s3://checked/wds"]);
    assert_eq!(code, 0, "{report}");
    let shards = std::fs::read_dir(bucket.join("wds"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tar")
        })
        .count();
    assert!(shards >= 4);
    assert_eq!(
        report["files_checked"].as_u64(),
        Some(shards as u64),
        "{report}"
    );
    // Damage through the server's directory: truncate one, flip a byte in another,
    // delete a third, add a stray object. The same command on a local copy with the
    // same damage finds the same digest-level findings (it also walks the structure).
    let dir = bucket.join("wds");
    let truncated = std::fs::read(dir.join("shard-000001.tar")).unwrap();
    std::fs::write(
        dir.join("shard-000001.tar"),
        &truncated[..truncated.len() / 2],
    )
    .unwrap();
    let mut flipped = std::fs::read(dir.join("shard-000002.tar")).unwrap();
    flipped[2000] ^= 1;
    std::fs::write(dir.join("shard-000002.tar"), &flipped).unwrap();
    std::fs::remove_file(dir.join("shard-000003.tar")).unwrap();
    std::fs::write(dir.join("stray.bin"), b"not ours").unwrap();
    let (code, remote) = s3.json(&["verify", "s3://checked/wds"]);
    assert_eq!(code, 1, "{remote}");
    let remote = findings(&remote);
    let copy = Tree::new();
    copy_dir(&dir, &copy.join("wds"));
    let (code, local) = run_json(&["verify", &copy.s("wds")]);
    assert_eq!(code, 1, "{local}");
    let local = findings(&local);
    for want in [
        ("size_mismatch", "shard-000001.tar"),
        ("hash_mismatch", "shard-000002.tar"),
        ("missing_file", "shard-000003.tar"),
        ("unlisted_file", "stray.bin"),
    ] {
        assert!(
            remote
                .iter()
                .any(|(k, p, _)| (k.as_str(), p.as_str()) == want),
            "{want:?} in {remote:?}"
        );
    }
    for finding in &remote {
        assert!(
            local.contains(finding),
            "{finding:?} is also found locally: {local:?}"
        );
    }
}

#[test]
fn manifest_of_a_prefix_equals_the_manifest_of_the_same_files_on_disk() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("hashed");
    let input = corpus(50, 30_000);
    copy_dir(input.path(), &bucket.join("raw"));
    let (code, report) = s3.json(&["manifest", "s3://hashed/raw"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["files"], 150);
    let (code, again) = s3.json(&["manifest", "s3://hashed/raw"]);
    assert_eq!(
        code, 2,
        "an existing manifest is kept without --force: {again}"
    );
    let copy = Tree::new();
    copy_dir(input.path(), &copy.join("raw"));
    let (code, local) = run_json(&["manifest", &copy.s("raw")]);
    assert_eq!(code, 0, "{local}");
    assert_eq!(report["root_sha256"], local["root_sha256"]);
    assert_eq!(
        std::fs::read(bucket.join("raw/manifest.json")).unwrap(),
        std::fs::read(copy.join("raw/manifest.json")).unwrap()
    );
    assert_eq!(
        std::fs::read(bucket.join("raw/SHA256SUMS")).unwrap(),
        std::fs::read(copy.join("raw/SHA256SUMS")).unwrap()
    );
    let (code, report) = s3.json(&["verify", "s3://hashed/raw"]);
    assert_eq!(code, 0, "{report}");
}

#[test]
fn real_readers_read_what_pack_wrote_to_the_bucket() {
    let Some(s3) = S3::start() else { return };
    if crate::interop::python().is_none() {
        return;
    }
    s3.bucket("readers");
    let input = mds_corpus(40);
    let local = Tree::new();
    for (format, name) in [("mds", "mds"), ("webdataset", "wds")] {
        let args = ["--format", format, "--shard-size", "16KiB"];
        let o = run(&[
            &["pack", input.path().to_str().unwrap(), &local.s(name)][..],
            &args,
        ]
        .concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let url = format!("s3://readers/{name}");
        let (code, report) =
            s3.json(&[&["pack", input.path().to_str().unwrap(), &url][..], &args].concat());
        assert_eq!(code, 0, "{report}");
    }
    let script = crate::interop::interop_dir().join("check_remote.py");
    let mut env: Vec<(&str, std::ffi::OsString)> =
        s3.env().into_iter().map(|(k, v)| (k, v.into())).collect();
    env.push((
        "S3_ENDPOINT_URL",
        format!("http://127.0.0.1:{}", s3.port).into(),
    ));
    env.push(("AWS_DEFAULT_REGION", "us-east-1".into()));
    let env: Vec<(&str, &std::ffi::OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let out = crate::interop::run_python(
        &[
            script.to_str().unwrap(),
            &local.s("mds"),
            "s3://readers/mds",
            &local.s("wds"),
            "s3://readers/wds",
        ],
        &env,
    )
    .unwrap();
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn parts_packed_to_a_bucket_merge_as_on_disk() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("parts");
    let input = mds_corpus(30);
    let local = Tree::new();
    for rank in ["0", "1"] {
        let args = [
            "--format",
            "mds",
            "--shard-size",
            "16KiB",
            "--rank",
            rank,
            "--world-size",
            "2",
        ];
        let o = run(&[
            &["pack", input.path().to_str().unwrap(), &local.s("out")][..],
            &args,
        ]
        .concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let (code, report) = s3.json(
            &[
                &["pack", input.path().to_str().unwrap(), "s3://parts/out"][..],
                &args,
            ]
            .concat(),
        );
        assert_eq!(code, 0, "{report}");
    }
    let (code, local_report) = run_json(&["merge", &local.s("out")]);
    assert_eq!(code, 0, "{local_report}");
    let (code, report) = s3.json(&["merge", "s3://parts/out"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["index"], true);
    assert_eq!(report["root_sha256"], local_report["root_sha256"]);
    assert_eq!(snapshot(&bucket.join("out")), snapshot(&local.join("out")));
    let (code, report) = s3.json(&["verify", "s3://parts/out"]);
    assert_eq!(code, 0, "{report}");
    // A merged dataset stages whole (its parts' manifests included) and verifies.
    let (code, report) = s3.json(&["stage", "s3://parts/out", &local.s("staged")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        snapshot(&local.join("staged")),
        snapshot(&local.join("out"))
    );
    assert_eq!(run(&["verify", &local.s("staged")]).status.code(), Some(0));
}
