//! `shardsmith manifest`: manifests of directories shardsmith did not write.

use crate::util::*;

#[test]
fn manifest_of_a_foreign_directory_then_verify() {
    let dir = Tree::new();
    dir.file("model-00001-of-00002.safetensors", safetensors(1, 3 << 20))
        .file("model-00002-of-00002.safetensors", safetensors(2, 1000))
        .file("config.json", b"{\"hidden\": 8}")
        .file("optim/rank0.pt", checkpoint_fixture("plain/model.pt"));
    let d = dir.path().to_str().unwrap();
    let (code, report) = run_json(&["manifest", d]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["files"], 4);
    let m = manifest(dir.path());
    assert_eq!(m["kind"], "directory");
    let paths: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "config.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "optim/rank0.pt"
        ]
    );
    assert!(
        std::process::Command::new("sha256sum")
            .args(["--quiet", "-c", "SHA256SUMS"])
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(run(&["verify", d]).status.code(), Some(0));
    let again = run(&["manifest", d]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("already exists; use --force"));
    // Damage one file: verify says which and where.
    let mut bytes = std::fs::read(dir.join("model-00001-of-00002.safetensors")).unwrap();
    bytes[(2 << 20) + 9] = bytes[(2 << 20) + 9].wrapping_add(1);
    std::fs::write(dir.join("model-00001-of-00002.safetensors"), bytes).unwrap();
    let (code, report) = run_json(&["verify", d]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&report),
        [(
            "hash_mismatch".into(),
            "model-00001-of-00002.safetensors".into(),
            Some(2 << 20)
        )]
    );
}

#[test]
fn manifest_to_another_file_and_tar_sample_counts() {
    let input = corpus(30, 2000);
    let out = Tree::new();
    assert!(
        run(&[
            "pack",
            input.path().to_str().unwrap(),
            &out.s("d"),
            "--shard-size",
            "32KiB"
        ])
        .status
        .success()
    );
    let packed = manifest(&out.join("d"));
    std::fs::remove_file(out.join("d/manifest.json")).unwrap();
    std::fs::remove_file(out.join("d/SHA256SUMS")).unwrap();
    let external = out.s("external.json");
    let (code, report) = run_json(&["manifest", &out.s("d"), "-o", &external]);
    assert_eq!(code, 0);
    assert_eq!(report["samples"], 30, "tar shards are walked and counted");
    assert!(!out.join("d/manifest.json").exists());
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&external).unwrap()).unwrap();
    for (a, b) in m["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(packed["files"].as_array().unwrap())
    {
        for field in [
            "path",
            "size",
            "sha256",
            "chunk_crc32",
            "samples",
            "first_key",
            "last_key",
        ] {
            assert_eq!(
                a[field], b[field],
                "{field}: manifest of the directory agrees with pack's"
            );
        }
    }
    assert_eq!(
        run(&["verify", &out.s("d"), "--manifest", &external])
            .status
            .code(),
        Some(0)
    );
}
