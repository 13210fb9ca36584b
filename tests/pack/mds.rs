//! `pack --format mds`, MDS verification and `merge`, driven end to end.
//! What holds for every format (round trip, rollover, `--jobs`, resume, `verify` of
//! damage) is in tests/pack/conformance.rs.

use std::path::Path;

use crate::util::*;

fn pack_mds(input: &Path, output: &str, extra: &[&str]) -> std::process::Output {
    cmd()
        .args(["pack", input.to_str().unwrap(), output, "--format", "mds"])
        .args(MDS_COLUMNS)
        .args(extra)
        .output()
        .unwrap()
}

fn index(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap()
}

#[test]
fn every_encoding_packs_and_verifies() {
    let input = mds_corpus(60);
    let out = Tree::new();
    let o = pack_mds(
        input.path(),
        &out.s("d"),
        &["--shard-size", "16KiB", "--json"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let idx = index(&out.join("d"));
    let shards = idx["shards"].as_array().unwrap();
    assert_eq!(report["shards"], shards.len());
    assert!(shards.len() > 3);
    let total: u64 = shards.iter().map(|s| s["samples"].as_u64().unwrap()).sum();
    assert_eq!(total, 60);
    let first = &shards[0];
    assert_eq!(
        first["column_names"],
        serde_json::json!([
            "arr.npy", "bin", "cls", "emb.npy", "f32", "json", "key", "txt"
        ])
    );
    assert_eq!(
        first["column_encodings"],
        serde_json::json!([
            "ndarray:int32",
            "bytes",
            "int",
            "ndarray:uint16:3",
            "float32",
            "json",
            "str",
            "str"
        ])
    );
    assert_eq!(
        first["column_sizes"],
        serde_json::json!([null, null, 8, 6, 4, null, null, null])
    );
    assert_eq!(first["hashes"], serde_json::json!(["xxh64"]));
    for shard in shards {
        assert!(
            shard["raw_data"]["bytes"].as_u64().unwrap() <= 16 * 1024,
            "{shard}"
        );
        assert!(shard["samples"].as_u64().unwrap() > 0, "no empty shard");
    }
    let raw = std::fs::read(out.join("d/index.json")).unwrap();
    assert!(
        !raw.ends_with(b"\n") && text(&raw).starts_with("{\"shards\": [{\"column_encodings\": "),
        "Python json.dump style"
    );
    let (code, v) = run_json(&["verify", &out.s("d")]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["samples"], 60);
}

#[test]
fn oversize_first_sample_gets_its_own_shard_and_no_empty_shard() {
    let input = Tree::new();
    input
        .file("a.bin", noise(1, 40_000))
        .file("b.bin", b"small")
        .file("c.bin", b"small");
    let out = Tree::new();
    let o = cmd()
        .args([
            "pack",
            input.path().to_str().unwrap(),
            &out.s("d"),
            "--format",
            "mds",
            "--shard-size",
            "8KiB",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("warning: sample `a`"));
    let counts: Vec<u64> = index(&out.join("d"))["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["samples"].as_u64().unwrap())
        .collect();
    assert_eq!(
        counts,
        [1, 2],
        "MDSWriter would write [0, 1, 2]: we never write an empty shard"
    );
}

#[test]
fn samples_the_columns_cannot_hold_are_refused_with_the_reason() {
    let input = Tree::new();
    input
        .file("a.jpg", b"\xff\xd8\xff\xd9")
        .file("a.cls", b"3")
        .file("b.jpg", b"\xff\xd8\xff\xd9")
        .file("c.jpg", b"\xff\xd8\xff\xd9")
        .file("c.cls", b"seven");
    let out = Tree::new();
    let p = input.path().to_str().unwrap();
    let (code, report) = run_json(&[
        "pack",
        p,
        &out.s("d"),
        "--format",
        "mds",
        "--column",
        "cls:int",
    ]);
    assert_eq!(code, 0, "{report}");
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().into(),
                s["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .any(|(p, r)| p == "b.jpg" && r.contains("has no `cls` field"))
    );
    assert!(
        skipped
            .iter()
            .any(|(p, r)| p == "c.cls" && r.contains("is not an integer"))
    );
    assert_eq!(report["samples"], 1);
    let (code, report) = run_json(&["pack", p, &out.s("f"), "--format", "mds", "--fields", "jpg"]);
    assert_eq!(code, 0);
    assert_eq!(report["samples"], 3, "--fields packs every sample's jpg");
    for (args, needle) in [
        (vec!["--column", "nope:int"], "no sample has that field"),
        (vec!["--column", "cls:pkl"], "unsafe"),
        (vec!["--column", "cls"], "expected FIELD:ENCODING"),
        (vec!["--compression", "lz4"], "unknown compression"),
        (vec!["--hashes", "crc32"], "unknown hash"),
        (vec!["--shard-size", "5GiB"], "32-bit offsets"),
        (vec!["--prefix", "x"], "MDS shard names are fixed"),
        (vec!["--key-column", "jpg"], "is the key column"),
    ] {
        let o = cmd()
            .args(["pack", p, &out.s("bad"), "--format", "mds"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    let o = cmd()
        .args(["pack", p, &out.s("bad"), "--column", "cls:int"])
        .output()
        .unwrap();
    assert!(text(&o.stderr).contains("--column does not apply to --format webdataset"));
}

fn findings_of(dir: &Path) -> Vec<(String, String)> {
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    findings(&report).into_iter().map(|f| (f.0, f.1)).collect()
}

#[test]
fn every_corruption_class_is_found() {
    let input = mds_corpus(40);
    let out = Tree::new();
    assert!(
        pack_mds(
            input.path(),
            &out.s("d"),
            &["--shard-size", "16KiB", "--compression", "zstd"]
        )
        .status
        .success()
    );
    let base = out.join("d");
    type Damage = fn(&Path);
    type Case = (&'static str, Damage, Vec<(&'static str, &'static str)>);
    let cases: Vec<Case> = vec![
        (
            "truncated",
            |d| {
                let p = d.join("shard.00001.mds.zstd");
                let n = std::fs::metadata(&p).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_len(n / 2)
                    .unwrap();
            },
            vec![
                ("decompression_failed", "shard.00001.mds.zstd"),
                ("hash_mismatch", "shard.00001.mds.zstd"),
                ("index_mismatch", "shard.00001.mds.zstd"),
                ("size_mismatch", "shard.00001.mds.zstd"),
            ],
        ),
        (
            "flipped byte",
            |d| {
                let p = d.join("shard.00002.mds.zstd");
                let mut b = std::fs::read(&p).unwrap();
                let at = b.len() / 2;
                b[at] ^= 4;
                std::fs::write(&p, b).unwrap();
                // zstd frames carry no checksum: the flipped byte decompresses to other data,
                // caught by both the compressed and the decompressed hash in index.json.
            },
            vec![
                ("hash_mismatch", "shard.00002.mds.zstd"),
                ("index_mismatch", "shard.00002.mds.zstd"),
                ("index_mismatch", "shard.00002.mds.zstd"),
            ],
        ),
        (
            "missing shard",
            |d| std::fs::remove_file(d.join("shard.00000.mds.zstd")).unwrap(),
            vec![
                ("missing_file", "shard.00000.mds.zstd"),
                ("missing_file", "shard.00000.mds.zstd"),
            ],
        ),
        (
            "stale extra shard",
            |d| {
                std::fs::copy(
                    d.join("shard.00001.mds.zstd"),
                    d.join("shard.00077.mds.zstd"),
                )
                .unwrap();
            },
            vec![("unlisted_file", "shard.00077.mds.zstd")],
        ),
        (
            "index edited",
            |d| {
                let p = d.join("index.json");
                let t = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&p, t.replacen("\"samples\": ", "\"samples\": 1", 1)).unwrap();
            },
            vec![
                ("hash_mismatch", "index.json"),
                ("size_mismatch", "index.json"),
                ("index_mismatch", "shard.00000.mds.zstd"),
            ],
        ),
    ];
    for (name, damage, mut want) in cases {
        let copy = Tree::new();
        let d = copy.join("d");
        std::fs::create_dir(&d).unwrap();
        for e in std::fs::read_dir(&base).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), d.join(e.file_name())).unwrap();
        }
        damage(&d);
        let mut got = findings_of(&d);
        got.sort();
        want.sort();
        let want: Vec<(String, String)> = want
            .into_iter()
            .map(|(k, p)| (k.into(), p.into()))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn uncompressed_damage_is_located_in_the_shard() {
    let input = mds_corpus(20);
    let out = Tree::new();
    assert!(
        pack_mds(input.path(), &out.s("d"), &["--shard-size", "64KiB"])
            .status
            .success()
    );
    let d = out.join("d");
    std::fs::remove_file(d.join("manifest.json")).unwrap();
    std::fs::remove_file(d.join("SHA256SUMS")).unwrap();
    let p = d.join("shard.00000.mds");
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[0..4096].fill(0);
    std::fs::write(&p, &bytes).unwrap();
    let (code, report) = run_json(&["verify", d.to_str().unwrap()]);
    assert_eq!(code, 1);
    let f = &report["findings"][0];
    assert_eq!(
        (f["kind"].as_str(), f["path"].as_str(), f["offset"].as_u64()),
        (Some("bad_header"), Some("shard.00000.mds"), Some(4))
    );
}

#[test]
fn tasks_finished_by_merge_equal_the_single_run() {
    let input = mds_corpus(45);
    let out = Tree::new();
    let whole = out.s("whole");
    assert!(
        pack_mds(input.path(), &whole, &["--shard-size", "16KiB"])
            .status
            .success()
    );
    let parts = out.s("parts");
    for task in 0..3 {
        let o = pack_mds(
            input.path(),
            &parts,
            &[
                "--shard-size",
                "16KiB",
                "--task-index",
                &task.to_string(),
                "--task-count",
                "3",
            ],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(&format!(
                "task {task} of 3 (from --task-index {task} --task-count 3)"
            )),
            "{}",
            text(&o.stderr)
        );
    }
    let (code, report) = run_json(&["merge", &parts]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["tasks"], 3);
    assert_eq!(report["samples"], 45);
    assert_eq!(report["index"], true);
    let all = |dir: &str| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(all(&parts), all(&whole), "byte-identical to the single run");
    assert_eq!(run(&["verify", &parts]).status.code(), Some(0));
    // A finished run has nothing to merge: a finishing job run twice is not an error.
    let o = run(&["merge", &whole]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("nothing to merge"),
        "{}",
        text(&o.stdout)
    );
    let empty = Tree::new();
    let o = run(&["merge", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no parts to merge"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&[
        "pack",
        input.path().to_str().unwrap(),
        &out.s("x"),
        "--task-index",
        "3",
        "--task-count",
        "3",
    ]);
    assert!(text(&o.stderr).contains("must be below the task count 3"));
}

#[test]
fn a_sample_left_out_while_writing_gives_the_shard_its_plan_would_without_it() {
    // Uncompressed shards stream against their plan; a sample left out at write time
    // (its content fails) makes the shard fall back to the buffered encoder. Both paths
    // must give the same bytes as a run whose input never held that sample.
    let with_bad = mds_corpus(12);
    with_bad.file("set_1/s00004.json", b"{\"broken\": ");
    let without = mds_corpus(12);
    for ext in ["bin", "txt", "json", "cls", "f32", "emb.npy", "arr.npy"] {
        std::fs::remove_file(without.join(&format!("set_1/s00004.{ext}"))).unwrap();
    }
    let out = Tree::new();
    let (code, report) = {
        let o = pack_mds(with_bad.path(), &out.s("a"), &["--json"]);
        (
            o.status.code(),
            serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap(),
        )
    };
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["samples"], 11);
    assert_eq!(
        report["skipped"].as_array().unwrap().len(),
        7,
        "every file of the left-out sample, once"
    );
    assert!(pack_mds(without.path(), &out.s("b"), &[]).status.success());
    assert_eq!(
        std::fs::read(out.join("a/shard.00000.mds")).unwrap(),
        std::fs::read(out.join("b/shard.00000.mds")).unwrap()
    );
    assert_eq!(run(&["verify", &out.s("a")]).status.code(), Some(0));
}
