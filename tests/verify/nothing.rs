//! A check that says OK must mean something: `verify` of an empty directory, of files it
//! cannot check, of a single unknown file, or next to another tool's `manifest.json`.

use crate::util::*;

#[test]
fn an_empty_directory_is_a_finding_unless_allowed() {
    let t = Tree::new();
    std::fs::create_dir(t.join("empty")).unwrap();
    let o = run(&["verify", &t.s("empty")]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains(
            "error: .: nothing_to_verify: the directory holds no file; pass --allow-empty if that is expected\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("FAILED: 1 problem(s), 0 warning(s)\n"),
        "{stdout}"
    );
    let (code, report) = run_json(&["verify", &t.s("empty"), "--allow-empty"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["checked"]["structure"], 0);
}

#[test]
fn a_folder_of_unknown_files_without_digests_is_a_finding() {
    let t = Tree::new();
    t.file("src/main.rs", "fn main() {}\n")
        .file("src/lib.rs", "")
        .file("README.md", "# hi\n");
    let (code, report) = run_json(&["verify", t.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [("nothing_to_verify".to_string(), ".".to_string(), None)]
    );
    assert_eq!(report["checked"]["unchecked"], 3);
    assert_eq!(report["checked"]["manifest"], 0);
    let o = run(&["verify", t.path().to_str().unwrap()]);
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("  digests    none (no digest recorded for any file)\n")
            && stdout.contains("  structure  0 file(s) of a known format walked\n")
            && stdout.contains(
                "  unchecked  3 file(s) only read: no recorded digest, no known format (`README.md`, `src/lib.rs`, `src/main.rs`)\n"
            ),
        "{stdout}"
    );
    // Once a manifest records the files, the same folder verifies exactly.
    let m = run(&["manifest", t.path().to_str().unwrap()]);
    assert!(m.status.success(), "{}", text(&m.stderr));
    let (code, report) = run_json(&["verify", t.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["checked"]["manifest"], 3);
    assert_eq!(report["checked"]["unchecked"], 0);
}

#[test]
fn a_single_file_of_no_known_format_is_a_finding_unless_allowed() {
    let t = Tree::new();
    t.file("notes.txt", "hello");
    let (code, report) = run_json(&["verify", &t.s("notes.txt")]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [(
            "nothing_to_verify".to_string(),
            "notes.txt".to_string(),
            None
        )]
    );
    let (code, _) = run_json(&["verify", &t.s("notes.txt"), "--allow-empty"]);
    assert_eq!(code, 0);
}

#[test]
fn another_tools_manifest_is_named_and_checked_as_a_file() {
    let t = Tree::new();
    let shards = t.s("shards");
    let o = run(&["pack", samples().to_str().unwrap(), &shards]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Replace our manifest with JSON of another tool.
    std::fs::write(
        t.join("shards/manifest.json"),
        r#"{"a": "b", "files": "a"}"#,
    )
    .unwrap();
    std::fs::remove_file(t.join("shards/SHA256SUMS")).unwrap();
    let o = run(&["verify", &shards]);
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains(
            "note: `manifest.json` is not a shardsmith manifest, so it was checked as one of the files: it has no `\"tool\": \"shardsmith\"` member; its keys: a, files\n"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("invalid type"),
        "no parser internals: {stdout}"
    );
    // The shards are still walked: something was verified, so no nothing_to_verify.
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    let pinned = run(&["verify", &shards, "--expect-root", &"0".repeat(64)]);
    assert_eq!(pinned.status.code(), Some(1));
    assert!(
        text(&pinned.stdout)
            .contains("--expect-root was given but `manifest.json` is not a shardsmith manifest"),
        "{}",
        text(&pinned.stdout)
    );
}
