//! DALI's and Energon's indexes: `pack --index dali,energon` writes them in the same pass
//! (listed in the manifest, the same bytes for any --jobs and from a split run), `index
//! --for dali,energon` writes the same bytes from existing shards, Energon's unique keys
//! are enforced, and `verify` finds an index gone stale. The real readers read them in
//! `reader_indexes_interop.rs`.

use std::path::Path;

use super::wids_index::pack;
use crate::util::*;

const READERS: &[&str] = &["--index", "dali,energon"];

/// Every index file under `dir` (DALI's, Energon's), by path, with its bytes.
fn index_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if rel.ends_with(".idx") || rel.starts_with(".nv-meta") {
                found.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn pack_writes_both_indexes_listed_and_the_same_for_any_jobs_and_split_runs() {
    let out = Tree::new();
    let (code, report) = pack(&out.join("j2"), &["--index", "dali,energon", "-j", "2"]);
    assert_eq!(code, 0, "{report}");
    let (code, report) = pack(&out.join("j1"), &["--index", "all", "-j", "1"]);
    assert_eq!(code, 0, "{report}");
    let files = index_files(&out.join("j2"));
    assert_eq!(
        files,
        index_files(&out.join("j1")),
        "bytes depend on --jobs"
    );
    let m = manifest(&out.join("j2"));
    let listed: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let shards: Vec<&&str> = listed.iter().filter(|p| p.ends_with(".tar")).collect();
    assert!(shards.len() > 1, "{m}");
    for shard in &shards {
        let stem = shard.strip_suffix(".tar").unwrap();
        for index in [format!("dali/{stem}.idx"), format!("{shard}.idx")] {
            assert!(listed.contains(&index.as_str()), "{index} not listed: {m}");
        }
    }
    for meta in [
        ".info.json",
        "split.yaml",
        "dataset.yaml",
        "index.sqlite",
        "index.uuid",
    ] {
        assert!(
            listed.contains(&format!(".nv-meta/{meta}").as_str()),
            "{meta}: {m}"
        );
    }
    // The DALI index of the first shard, line by line: the data offset of each member.
    let dali =
        String::from_utf8(std::fs::read(out.join("j2/dali/shard-000000.idx")).unwrap()).unwrap();
    let count = m["files"][0]["samples"].as_u64().unwrap();
    assert_eq!(dali.lines().next(), Some(format!("v1.2 {count}").as_str()));
    assert!(
        dali.lines().nth(1).unwrap().starts_with("json 512 "),
        "{dali}"
    );
    let o = run(&["verify", out.join("j2").to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        text(&o.stdout) + &text(&o.stderr)
    );

    // A run split into two tasks, then finished, writes the same files.
    let split = out.join("split");
    for i in ["0", "1"] {
        let mut extra = READERS.to_vec();
        extra.extend(["--task-index", i, "--task-count", "2"]);
        let (code, report) = pack(&split, &extra);
        assert_eq!(code, 0, "{report}");
    }
    let (code, report) = run_json(&["merge", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(index_files(&split), files);
}

#[test]
fn index_writes_what_pack_writes_and_lists_it() {
    let out = Tree::new();
    assert_eq!(pack(&out.join("packed"), READERS).0, 0);
    let plain = out.join("plain");
    assert_eq!(pack(&plain, &[]).0, 0);
    let (code, report) = run_json(&["index", plain.to_str().unwrap(), "--for", "dali,energon"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(index_files(&plain), index_files(&out.join("packed")));
    let written = report["indexes"].as_array().unwrap();
    assert!(
        written.iter().any(|f| f == ".nv-meta/index.sqlite"),
        "{report}"
    );
    assert!(
        written.iter().any(|f| f == "dali/shard-000000.idx"),
        "{report}"
    );
    assert_eq!(manifest(&plain)["root_sha256"], report["root_sha256"]);
    let o = run(&["verify", plain.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        text(&o.stdout) + &text(&o.stderr)
    );
}

#[test]
fn energon_needs_unique_keys_across_shards() {
    let out = Tree::new();
    // The same samples packed twice, side by side: every key appears in two shards.
    assert_eq!(pack(&out.join("d/a"), &[]).0, 0);
    assert_eq!(pack(&out.join("d/b"), &[]).0, 0);
    let dir = out.join("d");
    let o = run(&["index", dir.to_str().unwrap(), "--for", "energon"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("appears twice") && err.contains("b/shard-000000.tar"),
        "{err}"
    );
    assert!(!dir.join(".nv-meta/index.sqlite").exists());
    // DALI's indexes are per shard: the same keys in two shards are fine.
    let (code, report) = run_json(&["index", dir.to_str().unwrap(), "--for", "dali"]);
    assert_eq!(code, 0, "{report}");
    assert!(dir.join("dali/b/shard-000000.idx").is_file());
}

#[test]
fn verify_finds_every_index_of_a_rewritten_shard_stale() {
    let out = Tree::new();
    let dir = out.join("o");
    assert_eq!(pack(&dir, &["--index", "all"]).0, 0);
    // The shard is rewritten (another shard's bytes, one sample fewer) and the manifest
    // made again over it: digests match, but every index of the shard is stale.
    std::fs::copy(dir.join("shard-000000.tar"), dir.join("shard-000001.tar")).unwrap();
    let o = run(&["manifest", dir.to_str().unwrap(), "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    let findings = report["findings"].as_array().unwrap();
    let stale: Vec<String> = findings
        .iter()
        .filter(|f| f["kind"] == "index_mismatch" && f["path"] == "shard-000001.tar")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    for index in [
        "dali/shard-000001.idx",
        "shard-000001.tar.idx",
        ".nv-meta/index.sqlite",
        ".nv-meta/.info.json",
    ] {
        assert!(stale.iter().any(|m| m.contains(index)), "{index}: {report}");
    }
    assert!(
        findings.iter().all(|f| f["path"] != "shard-000002.tar"),
        "an intact shard is not blamed: {report}"
    );
}

#[test]
fn compressed_shards_get_no_index() {
    let out = Tree::new();
    let (code, report) = pack(
        &out.join("x"),
        &["--compression", "zstd", "--index", "energon"],
    );
    assert_eq!(code, 2, "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(message.contains("compressed shards"), "{report}");
    assert!(!out.join("x/.nv-meta").exists());
}

#[test]
fn merge_of_parts_writes_the_root_energon_index_index_would_write() {
    let out = Tree::new();
    let root = out.join("m");
    for (part, dir) in [("0", "animals"), ("1", "landscapes"), ("10", "text")] {
        let input = samples().join(dir);
        let (code, report) = run_json(&[
            "pack",
            input.to_str().unwrap(),
            root.join(part).to_str().unwrap(),
            "--shard-size",
            "16KiB",
            "--index",
            "energon",
        ]);
        assert_eq!(code, 0, "{report}");
    }
    let (code, report) = run_json(&["merge", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    let merged = index_files(&root);
    let listed = manifest(&root).to_string();
    assert!(listed.contains("\".nv-meta/index.sqlite\""), "{listed}");
    let info = std::fs::read_to_string(root.join(".nv-meta/.info.json")).unwrap();
    // Energon's order: paths part by part, part names compared as text.
    assert!(
        info.find("\"0/shard-000000.tar\"") < info.find("\"1/shard-000000.tar\""),
        "{info}"
    );
    assert!(
        info.find("\"1/shard-000000.tar\"") < info.find("\"10/shard-000000.tar\""),
        "{info}"
    );
    // `index` over the merged root (reading every shard) writes the same files.
    std::fs::remove_dir_all(root.join(".nv-meta")).unwrap();
    let (code, report) = run_json(&["index", root.to_str().unwrap(), "--for", "energon"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(index_files(&root), merged);
}

#[test]
fn a_name_dali_cannot_list_is_left_out_or_refused() {
    let out = Tree::new();
    let input = out.join("in");
    std::fs::create_dir_all(input.join("d")).unwrap();
    std::fs::write(input.join("d/plain.txt"), b"a").unwrap();
    std::fs::write(input.join("d/with space.txt"), b"b").unwrap();
    // pack leaves the sample out, saying why, and indexes the rest.
    let (code, report) = run_json(&[
        "pack",
        input.to_str().unwrap(),
        out.join("o").to_str().unwrap(),
        "--index",
        "dali",
    ]);
    assert_eq!(code, 0, "{report}");
    let skipped = report.to_string();
    assert!(
        skipped.contains("with space") && skipped.contains("DALI"),
        "{report}"
    );
    let dali = std::fs::read_to_string(out.join("o/dali/shard-000000.idx")).unwrap();
    assert!(dali.starts_with("v1.2 1\n"), "{dali}");
    // index of a shard that holds the name (packed without --index) refuses, naming it.
    let plain = out.join("p");
    let (code, report) = run_json(&["pack", input.to_str().unwrap(), plain.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    let o = run(&["index", plain.to_str().unwrap(), "--for", "dali"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("d/with space.txt"),
        "{}",
        text(&o.stderr)
    );
    assert!(!plain.join("dali").exists());
}

#[test]
fn a_killed_run_resumes_to_the_same_indexes() {
    // The indexes are built as each shard is committed; a resumed run feeds the shards
    // an interrupted one kept first, and ends byte-identical to an uninterrupted run.
    let input = corpus(600, 30_000);
    let out = Tree::new();
    let args = |dir: &Path| -> Vec<String> {
        [
            "pack",
            input.path().to_str().unwrap(),
            dir.to_str().unwrap(),
            "--shard-size",
            "256KiB",
            "-j",
            "2",
            "--index",
            "all",
        ]
        .map(String::from)
        .to_vec()
    };
    let reference = out.join("reference");
    let o = run(&args(&reference)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let expected = snapshot(&reference);
    let mut kills = 0;
    for (round, shards_before_kill) in [1usize, 4, 9].into_iter().enumerate() {
        let target = out.join(&format!("killed{round}"));
        let argv = args(&target);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        if run_and_kill(&argv, &target, ".tar", shards_before_kill) {
            kills += 1;
        }
        let o = run(&argv);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            snapshot(&target) == expected,
            "round {round}: differs from an uninterrupted run"
        );
    }
    assert!(kills > 0, "no run was killed before it finished");
}
