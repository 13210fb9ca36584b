//! `pack --format hf` (Hugging Face `save_to_disk` directories), hf input, and their
//! verification. What holds for every format (real reader, rollover, `--jobs`, resume,
//! `verify` of damage) is also in tests/pack/conformance.rs; `datasets` itself reads
//! and writes them in tests/pack/hf_interop.rs.

use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// `pack INPUT OUT --format hf EXTRA...`; asserts success, returns the report.
fn pack_hf(input: &Path, out: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "pack",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "hf",
    ];
    args.extend(extra);
    let (code, report) = run_json(&args);
    assert_eq!(code, 0, "{report}");
    report
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The `.arrow` files of `dir`, sorted.
fn arrow_files(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".arrow"))
        .collect();
    files.sort();
    files
}

#[test]
fn shards_roll_over_within_the_size_and_state_json_lists_them_in_order() {
    const LIMIT: u64 = 32 * 1024;
    let input = corpus(80, 6000);
    let out = Tree::new();
    let dir = out.join("hf");
    let report = pack_hf(input.path(), &dir, &["--shard-size", "32KiB"]);
    let files = arrow_files(&dir);
    assert!(files.len() > 3, "{report}");
    assert_eq!(files[0], "data-00000.arrow");
    for file in &files {
        let len = std::fs::metadata(dir.join(file)).unwrap().len();
        assert!(len <= LIMIT, "{file}: {len} bytes");
    }
    let state = json_file(&dir.join("state.json"));
    let listed: Vec<&str> = state["_data_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap())
        .collect();
    assert_eq!(listed, files);
    assert_eq!(state["_fingerprint"].as_str().unwrap().len(), 16);
    let features = &json_file(&dir.join("dataset_info.json"))["features"];
    assert_eq!(features["__key__"]["dtype"], "string");
    assert_eq!(features["bin"]["dtype"], "binary");
    assert_eq!(features["txt"]["dtype"], "string");
    assert_eq!(features["json"]["dtype"], "string");

    // Same bytes whatever --jobs (dataset files and fingerprint included).
    let j1 = out.join("j1");
    let j2 = out.join("j2");
    pack_hf(input.path(), &j1, &["--shard-size", "32KiB", "-j", "1"]);
    pack_hf(input.path(), &j2, &["--shard-size", "32KiB", "-j", "2"]);
    assert!(snapshot(&j1) == snapshot(&j2), "-j 1 vs -j 2");
    assert!(snapshot(&j1) == snapshot(&dir));
}

#[test]
fn verify_passes_the_output_and_names_a_damaged_arrow_file() {
    let input = corpus(40, 6000);
    let out = Tree::new();
    let clean = out.join("clean");
    pack_hf(input.path(), &clean, &["--shard-size", "32KiB"]);
    let (code, report) = run_json(&["verify", clean.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 40, "{report}");
    let shard = arrow_files(&clean)[1].clone();
    let damaged = out.join("damaged");
    copy_dir(&clean, &damaged);
    // Without the manifest and sums only the structure of the stream tells.
    std::fs::remove_file(damaged.join("manifest.json")).unwrap();
    std::fs::remove_file(damaged.join("SHA256SUMS")).unwrap();
    let bytes = std::fs::read(damaged.join(&shard)).unwrap();
    std::fs::write(damaged.join(&shard), &bytes[..bytes.len() / 2]).unwrap();
    let (code, report) = run_json(&["verify", damaged.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    let found = findings(&report);
    assert!(
        found.iter().any(|f| f.0 == "truncated" && f.1 == shard),
        "{found:?}"
    );
    assert!(found.iter().all(|f| f.1 == shard), "{found:?}");
    std::fs::write(damaged.join(&shard), &bytes[..bytes.len() - 8]).unwrap();
    let (_, report) = run_json(&["verify", damaged.to_str().unwrap()]);
    assert!(
        findings(&report)
            .iter()
            .any(|f| f.0 == "missing_end_marker" && f.1 == shard),
        "{report}"
    );
}

#[test]
fn a_text_field_that_is_not_utf8_is_left_out_or_kept_as_binary() {
    let input = Tree::new();
    input
        .file("a.txt", "fine")
        .file("a.bin", "x")
        .file("b.txt", b"\xff\xfe not text")
        .file("b.bin", "y");
    let out = Tree::new();
    let report = pack_hf(input.path(), &out.join("str"), &[]);
    assert_eq!(report["samples"], 1, "{report}");
    let reasons: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("field `txt` is not valid UTF-8") && r.contains("str")),
        "{reasons:?}"
    );
    // As a binary column, the bytes are kept as they are.
    let dir = out.join("bytes");
    let report = pack_hf(input.path(), &dir, &["--column", "txt:bytes"]);
    assert_eq!(report["samples"], 2, "{report}");
    let features = &json_file(&dir.join("dataset_info.json"))["features"];
    assert_eq!(features["txt"]["dtype"], "binary");
    let o = run(&["cat", dir.to_str().unwrap(), "b", "txt"]);
    assert_eq!(o.stdout, b"\xff\xfe not text");
}

#[test]
fn hf_input_from_our_output_reads_back_every_sample() {
    let input = corpus(60, 6000);
    let out = Tree::new();
    let first = out.join("first");
    pack_hf(input.path(), &first, &["--shard-size", "32KiB"]);
    // Told by its state.json and dataset_info.json, without --input-format.
    let (code, report) = run_json(&["ls", first.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    let o = run(&["cat", first.to_str().unwrap(), "c03/sample_00010", "bin"]);
    assert_eq!(
        o.stdout,
        std::fs::read(input.join("c03/sample_00010.bin")).unwrap()
    );
    let o = run(&["stats", first.to_str().unwrap()]);
    assert!(
        text(&o.stdout).contains("60 samples"),
        "{}",
        text(&o.stdout)
    );
    // hf -> hf: the same shards, byte for byte (keys from __key__, same columns).
    let second = out.join("second");
    let report = pack_hf(&first, &second, &["--shard-size", "32KiB"]);
    assert_eq!(report["samples"], 60, "{report}");
    for name in arrow_files(&first) {
        assert!(
            std::fs::read(first.join(&name)).unwrap() == std::fs::read(second.join(&name)).unwrap(),
            "{name} differs"
        );
    }
    assert_eq!(
        std::fs::read(first.join("state.json")).unwrap(),
        std::fs::read(second.join("state.json")).unwrap()
    );
    // hf -> webdataset: every field's bytes.
    let wds = out.join("wds");
    let (code, report) = run_json(&[
        "pack",
        first.to_str().unwrap(),
        wds.to_str().unwrap(),
        "--input-format",
        "hf",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 60, "{report}");
    let o = run(&["cat", wds.to_str().unwrap(), "c05/sample_00012", "txt"]);
    assert_eq!(
        o.stdout,
        std::fs::read(input.join("c05/sample_00012.txt")).unwrap()
    );
}
