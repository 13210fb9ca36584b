//! `pack` and `tokenize` reading and writing an S3 server (tests/remote/s3.rs starts it): every
//! format, every direction, byte-identical to the same command on local disk.

use std::path::Path;

use serde_json::Value;

use crate::remote::s3::{S3, local_pack};
use crate::util::*;

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn pack_to_s3_writes_the_same_bytes_as_to_disk_for_every_format() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("shards");
    let input = mds_corpus(60);
    for (label, format, extra) in [
        ("webdataset", "webdataset", vec!["--shard-size", "16KiB"]),
        // The readers' indexes too: Energon's index.sqlite is built in a temporary file
        // and streamed to the bucket.
        (
            "indexed",
            "webdataset",
            vec!["--shard-size", "16KiB", "--index", "all"],
        ),
        ("mds", "mds", vec!["--shard-size", "16KiB"]),
        ("parquet", "parquet", vec!["--shard-size", "16KiB"]),
        ("hf", "hf", vec!["--shard-size", "16KiB"]),
        ("litdata", "litdata", vec!["--shard-size", "16KiB"]),
    ] {
        let args: Vec<&str> = [&["--format", format][..], &extra].concat();
        let url = format!("s3://shards/{label}");
        let (code, report) =
            s3.json(&[&["pack", input.path().to_str().unwrap(), &url], &args[..]].concat());
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(report["output"], url);
        assert!(
            report["shards"].as_u64().unwrap() > 1,
            "{format}: several shards"
        );
        assert_eq!(
            snapshot(&bucket.join(label)),
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
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
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
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
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
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_run_holding_the_prefix_lease_keeps_others_out_until_it_is_gone() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("leased");
    let input = corpus(20, 1000);
    let input = input.path().to_str().unwrap();
    let lease = bucket.join("wds/.shardsmith-lock");
    std::fs::create_dir_all(lease.parent().unwrap()).unwrap();
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let here = here.trim();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let hold = |host: &str, pid: u32, renewed: u64| {
        let holder = serde_json::json!({
            "host": host, "pid": pid, "started": renewed, "renewed": renewed,
        });
        std::fs::write(&lease, holder.to_string()).unwrap();
    };

    // Held by a live process of this host (this test), then by a run on another host
    // that renewed it just now: refused, nothing written.
    for (host, pid) in [(here, std::process::id()), ("node-7", 4242)] {
        hold(host, pid, now);
        let out = s3.run(&["pack", input, "s3://leased/wds"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.contains("is being written by another shardsmith run")
                && err.contains(&format!("process {pid} on host `{host}`")),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(bucket.join("wds")).unwrap().count(),
            1,
            "only the lease is there"
        );
    }

    // Not renewed for ten minutes, or held by a process of this host that has ended (a
    // killed run): taken over, the run completes and releases it.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    let ended_pid = ended.id();
    ended.wait().unwrap();
    for (host, pid, renewed) in [("node-7", 4242, now - 600), (here, ended_pid, now)] {
        std::fs::remove_dir_all(bucket.join("wds")).unwrap();
        std::fs::create_dir_all(bucket.join("wds")).unwrap();
        hold(host, pid, renewed);
        let out = s3.run(&["pack", input, "s3://leased/wds"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(!lease.exists(), "released at the end");
        assert_eq!(
            snapshot(&bucket.join("wds")),
            local_pack(Path::new(input), &[])
        );
    }
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn pack_converts_webdataset_and_mds_datasets_read_from_s3() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("datasets");
    let input = mds_corpus(60);
    for (name, made_with) in [
        ("wds", &["--shard-size", "16KiB"][..]),
        (
            "wds-gz",
            &["--shard-size", "16KiB", "--compression", "gz"][..],
        ),
        (
            "mds-zstd",
            &[
                "--format",
                "mds",
                "--shard-size",
                "16KiB",
                "--compression",
                "zstd",
            ][..],
        ),
    ] {
        let dataset = bucket.join(name);
        let o = run(&[
            &[
                "pack",
                input.path().to_str().unwrap(),
                dataset.to_str().unwrap(),
            ],
            made_with,
        ]
        .concat());
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        for format in ["webdataset", "mds", "parquet"] {
            let args = ["--format", format, "--shard-size", "24KiB"];
            let out = Tree::new();
            let url = format!("s3://datasets/{name}");
            let (code, report) =
                s3.json(&[&["pack", url.as_str(), &out.s("d")], &args[..]].concat());
            assert_eq!(code, 0, "{name} -> {format}: {report}");
            assert_eq!(report["samples"], 60, "{name} -> {format}: {report}");
            let shards = |all: std::collections::BTreeMap<String, Vec<u8>>| {
                all.into_iter()
                    .filter(|(rel, _)| rel != "manifest.json" && rel != "SHA256SUMS")
                    .collect::<std::collections::BTreeMap<_, _>>()
            };
            assert_eq!(
                shards(snapshot(&out.join("d"))),
                shards(local_pack(&dataset, &args)),
                "{name} -> {format}: read from S3, the same shards as read from disk"
            );
        }
    }
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn index_of_shards_in_a_bucket_writes_what_pack_writes() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("shards");
    let input = mds_corpus(60);
    let args = ["--shard-size", "16KiB"];
    let url = "s3://shards/later";
    let (code, report) =
        s3.json(&[&["pack", input.path().to_str().unwrap(), url], &args[..]].concat());
    assert_eq!(code, 0, "{report}");
    // Indexed where it lies: every index file, listed in the manifest, as a local
    // `pack --index all` writes them.
    let (code, report) = s3.json(&["index", url, "--for", "all"]);
    assert_eq!(code, 0, "{report}");
    assert!(report["indexes"].as_array().unwrap().len() > 5, "{report}");
    let indexed = [&args[..], &["--index", "all"]].concat();
    // The manifests differ (pack records --index among its options); the rest is equal.
    let files = |mut files: std::collections::BTreeMap<String, Vec<u8>>| {
        files.retain(|name, _| name != "manifest.json" && name != "SHA256SUMS");
        files
    };
    let remote = files(snapshot(&bucket.join("later")));
    let local = files(local_pack(input.path(), &indexed));
    assert_eq!(
        remote.keys().collect::<Vec<_>>(),
        local.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &remote {
        assert!(local[name] == *bytes, "{name} differs");
    }
    let (code, report) = s3.json(&["verify", url]);
    assert_eq!(code, 0, "{report}");
}
