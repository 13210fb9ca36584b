//! `stage`, `verify`, `manifest` and `merge` of an S3 prefix, and the real readers
//! (streaming, webdataset) reading what `pack` wrote to the bucket.

use crate::remote::s3::S3;
use crate::util::*;

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
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
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
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
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
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
#[ignore = "needs an object store server and the python env: SHARDSMITH_S3S_FS, SHARDSMITH_PYTHON (tests/setup.sh)"]
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
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn parts_packed_to_a_bucket_merge_as_on_disk() {
    let Some(s3) = S3::start() else { return };
    let bucket = s3.bucket("parts");
    let input = mds_corpus(30);
    let local = Tree::new();
    // Parts packed separately, each into a directory of the output.
    for part in ["0", "1"] {
        let args = ["--format", "mds", "--shard-size", "16KiB"];
        let o = run(&[
            &[
                "pack",
                input.path().to_str().unwrap(),
                &local.s(&format!("out/{part}")),
            ][..],
            &args,
        ]
        .concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let (code, report) = s3.json(
            &[
                &[
                    "pack",
                    input.path().to_str().unwrap(),
                    &format!("s3://parts/out/{part}"),
                ][..],
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

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn an_object_with_a_chunk_list_is_staged_by_ranged_gets_of_its_chunks() {
    use crate::stage::chunks::{add_chunk_list, flip, same_file};
    // The test server answers too slowly for a 1 GiB object (streamed or by chunks), so
    // the object is 25 MiB and its manifest lists 4 MiB chunks.
    const CHUNK: u64 = 4 << 20;
    let Some(s3) = S3::start() else { return };
    let model = s3.bucket("models").join("m");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("model.bin"), noise(7, (25 << 20) + 12_345)).unwrap();
    std::fs::write(model.join("config.json"), b"{}").unwrap();
    let o = run(&["manifest", model.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    add_chunk_list(&model, "model.bin", CHUNK);
    let dst = Tree::new();
    let out = s3.run(&["stage", "s3://models/m", &dst.s("m"), "--no-progress"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1 large file(s) checked by 4 MiB chunks as they arrived"),
        "{}",
        text(&out.stdout)
    );
    assert!(same_file(
        &model.join("model.bin"),
        &dst.join("m/model.bin")
    ));
    assert_eq!(run(&["verify", &dst.s("m")]).status.code(), Some(0));

    // A damaged chunk in the bucket: named by its bytes, nothing of the file kept.
    flip(&model.join("model.bin"), 3 * CHUNK + 5);
    let (code, report) = s3.json(&["stage", "s3://models/m", &dst.s("bad")]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        report["mismatches"][0]["bytes"],
        serde_json::json!([3 * CHUNK, 4 * CHUNK])
    );
    assert!(!dst.join("bad/model.bin").exists());
    assert!(!dst.join("bad/manifest.json").exists());
}
