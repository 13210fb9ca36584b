//! `shardsmith pack` driven end to end.
//! What holds for every format (round trip, rollover, `--jobs`, resume, `verify` of
//! damage) is in tests/pack/conformance.rs.

use crate::util::*;

#[test]
fn samples_pack_cleanly_and_verify() {
    let out = Tree::new();
    let shards = out.s("shards");
    let (code, report) = run_json(&[
        "pack",
        samples().to_str().unwrap(),
        &shards,
        "--shard-size",
        "64KiB",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 32);
    assert_eq!(report["input_files"], 82);
    assert_eq!(report["shard_pattern"], "shard-{000000..000001}.tar");
    assert_eq!(report["skipped"].as_array().unwrap().len(), 0);
    let m = manifest(&out.join("shards"));
    assert_eq!(m["root_sha256"], report["root_sha256"]);
    for entry in m["files"].as_array().unwrap() {
        assert!(entry["size"].as_u64().unwrap() <= 64 * 1024);
    }
    let verify = run(&["verify", &shards]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    assert!(text(&verify.stdout).contains("OK: no problems found"));
    let sums = std::process::Command::new("sha256sum")
        .args(["--quiet", "-c", "SHA256SUMS"])
        .current_dir(out.join("shards"))
        .status()
        .unwrap();
    assert!(sums.success(), "sha256sum -c accepts SHA256SUMS");
}

#[test]
fn human_summary_names_output_and_root() {
    let out = Tree::new();
    let o = run(&["pack", samples().to_str().unwrap(), &out.s("s")]);
    assert_eq!(o.status.code(), Some(0));
    let stdout = text(&o.stdout);
    assert!(
        stdout.starts_with("packed 32 samples (82 files"),
        "{stdout}"
    );
    assert!(
        stdout.contains("shard-000000.tar") && stdout.contains("root "),
        "{stdout}"
    );
    assert!(
        o.stderr.is_empty(),
        "nothing on stderr for a clean run: {}",
        text(&o.stderr)
    );
    let quiet = run(&["pack", samples().to_str().unwrap(), &out.s("q"), "--quiet"]);
    assert!(quiet.stdout.is_empty() && quiet.stderr.is_empty());
}

/// Each sample is one 1536-byte file: 2048 bytes in a shard; a shard adds 1024.
fn uniform(n: usize) -> Tree {
    let tree = Tree::new();
    for i in 0..n {
        tree.file(&format!("k{i:03}.bin"), noise(i as u64, 1536));
    }
    tree
}

fn shard_sizes(dir: &std::path::Path) -> Vec<(u64, u64)> {
    manifest(dir)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["size"].as_u64().unwrap(), f["samples"].as_u64().unwrap()))
        .collect()
}

#[test]
fn rollover_at_exact_boundaries() {
    let input = uniform(5);
    let out = Tree::new();
    let p = input.path().to_str().unwrap();
    assert!(
        run(&["pack", p, &out.s("exact"), "--shard-size", "7168"])
            .status
            .success()
    );
    assert_eq!(shard_sizes(&out.join("exact")), [(7168, 3), (5120, 2)]);
    assert!(
        run(&["pack", p, &out.s("minus"), "--shard-size", "7167"])
            .status
            .success()
    );
    assert_eq!(
        shard_sizes(&out.join("minus")),
        [(5120, 2), (5120, 2), (3072, 1)]
    );
    assert!(
        run(&["pack", p, &out.s("count"), "--max-samples", "2"])
            .status
            .success()
    );
    assert_eq!(
        shard_sizes(&out.join("count")),
        [(5120, 2), (5120, 2), (3072, 1)]
    );
    for entry in std::fs::read_dir(out.join("exact")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tar") {
            assert_eq!(std::fs::metadata(&path).unwrap().len() % 512, 0);
        }
    }
}

#[test]
fn oversize_sample_gets_its_own_shard_with_a_warning() {
    let input = Tree::new();
    input
        .file("a.bin", b"small")
        .file("b.bin", noise(1, 50_000))
        .file("c.bin", b"small");
    let out = Tree::new();
    let o = run(&[
        "pack",
        input.path().to_str().unwrap(),
        &out.s("s"),
        "--shard-size",
        "8KiB",
    ]);
    assert!(o.status.success());
    assert!(
        text(&o.stderr).contains("warning: sample `b` takes 50688 bytes"),
        "{}",
        text(&o.stderr)
    );
    let sizes = shard_sizes(&out.join("s"));
    assert_eq!(sizes.len(), 3);
    assert_eq!(sizes[1], (51712, 1));
}

#[test]
fn rerun_is_a_no_op_and_other_options_are_refused_unless_forced() {
    let input = corpus(20, 3000);
    let p = input.path().to_str().unwrap();
    let out = Tree::new();
    let s = out.s("s");
    assert!(
        run(&["pack", p, &s, "--shard-size", "16KiB"])
            .status
            .success()
    );
    let before = snapshot(&out.join("s"));
    let again = run(&["pack", p, &s, "--shard-size", "16KiB"]);
    assert!(again.status.success());
    assert!(
        text(&again.stdout).starts_with("already complete"),
        "{}",
        text(&again.stdout)
    );
    let other = run(&["pack", p, &s, "--shard-size", "32KiB"]);
    assert_eq!(other.status.code(), Some(2));
    let err = text(&other.stderr);
    assert!(
        err.contains("packed differently (`--shard-size 16KiB` vs `--shard-size 32KiB`)")
            && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        snapshot(&out.join("s")),
        before,
        "a refused run changes nothing"
    );
    assert!(
        run(&["pack", p, &s, "--shard-size", "32KiB", "--force"])
            .status
            .success()
    );
    assert_eq!(manifest(&out.join("s"))["options"]["shard_size"], 32768);
    out.file("foreign/notes.md", "keep me");
    let foreign = run(&["pack", p, &out.s("foreign")]);
    assert_eq!(foreign.status.code(), Some(2));
    assert!(text(&foreign.stderr).contains("holds no shardsmith dataset (found `notes.md`)"));
}

#[test]
fn bad_inputs_are_left_out_with_reasons_or_refused_under_strict() {
    let t = Tree::new();
    let long_key = "d".repeat(96);
    t.file("ok/a.jpg", b"\xff\xd8\xff\xe0fake jpeg body\xff\xd9")
        .file("ok/a.json", b"{\"label\": 1}")
        .file("ok/b.txt", b"fine")
        .file("dup/x.jpg", b"\xff\xd8\xff\xd9")
        .file("dup/x.JPG", b"\xff\xd8\xff\xd9")
        .file("json/bad.json", b"{\"label\": ")
        .file("json/bad.txt", b"caption of the bad sample")
        .file("img/cut1.jpg", b"\xff\xd8\xff\xe0 truncated")
        .file("img/cut2.png", b"\x89PNG\r\n\x1a\nno IEND")
        .file("README", b"no extension")
        .file(".hidden.txt", b"hidden")
        .file(&format!("{long_key}.json"), b"{}");
    std::fs::write(
        t.path().join(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"bad\xffname.txt"),
        ),
        b"x",
    )
    .unwrap();
    std::os::unix::fs::symlink(t.join("ok/b.txt"), t.join("ok/link.txt")).unwrap();
    std::os::unix::fs::symlink(t.join("ok"), t.join("dirlink")).unwrap();
    std::os::unix::fs::symlink(t.join("nowhere"), t.join("broken.txt")).unwrap();
    // A file that exists but cannot be read, whatever the user's privileges.
    std::fs::create_dir_all(t.join("mem")).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", t.join("mem/unreadable.bin")).unwrap();

    let out = Tree::new();
    let p = t.path().to_str().unwrap();
    let (code, report) = run_json(&["pack", p, &out.s("s")]);
    assert_eq!(code, 0, "{report}");
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let reason = |path: &str| -> String {
        skipped
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("`{path}` not skipped: {skipped:#?}"))
            .1
            .clone()
    };
    assert!(reason("README").contains("no extension"));
    assert!(reason(".hidden.txt").contains("hidden"));
    assert!(reason("bad\u{fffd}name.txt").contains("not valid UTF-8"));
    assert!(reason(&format!("{long_key}.json")).contains("101 bytes"));
    assert!(reason("dup/x.jpg").contains("two files for field `jpg`"));
    assert!(reason("dup/x.JPG").contains("two files for field `jpg`"));
    assert!(reason("json/bad.json").contains("not valid JSON"));
    assert!(reason("json/bad.txt").contains("left out with `json/bad.json`"));
    assert!(reason("img/cut1.jpg").contains("end-of-image"));
    assert!(reason("img/cut2.png").contains("IEND"));
    assert!(reason("dirlink").contains("symlink to a directory (not followed)"));
    assert!(reason("broken.txt").contains("broken symlink"));
    assert!(reason("mem/unreadable.bin").contains("cannot be read"));
    assert_eq!(skipped.len(), 13, "{skipped:#?}");
    // Everything else is packed, the file symlink as a regular file with the target's bytes.
    assert_eq!(report["samples"], 3);
    let m = manifest(&out.join("s"));
    assert_eq!(m["skipped"].as_array().unwrap().len(), 13);
    assert_eq!(run(&["verify", &out.s("s")]).status.code(), Some(0));
    let members = tar_members(&out.join("s/shard-000000.tar"));
    assert_eq!(
        members.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
        ["ok/a.jpg", "ok/a.json", "ok/b.txt", "ok/link.txt"]
    );
    assert_eq!(members[3].1, b"fine");

    let strict = run(&["pack", p, &out.s("strict"), "--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    let err = text(&strict.stderr);
    assert!(
        err.starts_with("error: input `") && err.contains("--strict"),
        "{err}"
    );
    assert!(!out.join("strict/shard-000000.tar").exists());
    let lenient = run(&["pack", p, &out.s("none"), "--validate", "none"]);
    assert!(lenient.status.success());
    assert_eq!(
        manifest(&out.join("none"))["totals"]["samples"],
        6,
        "content checks off: json/ and img/ samples packed"
    );
}

fn tar_members(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (e.path().unwrap().to_string_lossy().into_owned(), data)
        })
        .collect()
}

#[test]
fn empty_input_and_bad_arguments_exit_2_with_the_reason() {
    let empty = Tree::new();
    let out = Tree::new();
    let o = run(&["pack", empty.path().to_str().unwrap(), &out.s("s")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no samples to pack")
            && text(&o.stderr).contains("holds no files")
    );
    let only_bad = Tree::new();
    only_bad.file("LICENSE", b"x");
    let o = run(&["pack", only_bad.path().to_str().unwrap(), &out.s("s")]);
    assert!(
        text(&o.stderr)
            .contains("all 1 input file(s) were left out; first: `LICENSE` has no extension"),
        "{}",
        text(&o.stderr)
    );
    let s = samples();
    let p = s.to_str().unwrap();
    for (args, needle) in [
        (vec!["--shard-size", "12XB"], "unknown size unit"),
        (vec!["--shard-size", "1k"], "too small"),
        (vec!["--prefix", "a/b"], "prefix `a/b`"),
        (vec!["--max-samples", "0"], "at least 1"),
        (vec!["--format", "tfrecord"], "invalid value 'tfrecord'"),
    ] {
        let o = cmd()
            .args(["pack", p, &out.s("bad")])
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
    let missing = run(&["pack", "/no/such/input", &out.s("x")]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("input `/no/such/input` does not exist"));
}

#[test]
fn files_from_and_output_inside_input() {
    let t = corpus(10, 100);
    let list = Tree::new();
    list.file(
        "list.txt",
        "c00/sample_00000.bin\nc00/sample_00000.json\n./c01/sample_00001.txt\nmissing.txt\n",
    );
    let out = Tree::new();
    let (code, report) = run_json(&[
        "pack",
        t.path().to_str().unwrap(),
        &out.s("s"),
        "--files-from",
        &list.s("list.txt"),
    ]);
    assert_eq!(code, 0);
    assert_eq!(report["samples"], 2);
    assert_eq!(report["input_files"], 3);
    assert_eq!(report["skipped"][0]["path"], "missing.txt");
    // Output inside input: the output is left out of the input.
    let inside = t.s("shards");
    assert!(
        run(&["pack", t.path().to_str().unwrap(), &inside])
            .status
            .success()
    );
    assert_eq!(manifest(&t.join("shards"))["totals"]["samples"], 10);
    let again = run(&["pack", t.path().to_str().unwrap(), &inside]);
    assert!(
        text(&again.stdout).starts_with("already complete"),
        "{}",
        text(&again.stdout)
    );
}
