//! `verify` and `audit` of a Hugging Face hub cache, built by hand exactly as
//! `huggingface_hub` lays it out (`file_download.py`): `models--org--name/blobs/<etag>`
//! (the SHA-256 for LFS files, the git blob SHA-1 for the others), relative symlinks
//! `snapshots/<commit>/<path> -> ../../blobs/<etag>` (one `../` more per directory of
//! the path), `refs/main` holding the commit with no newline, `.no_exist/<commit>/`
//! markers, `blobs/<etag>.incomplete` of an interrupted download, `.locks/` beside the
//! repositories.

use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::util::*;

const BERT: &str = "models--acme--tiny-bert";
const GPT: &str = "models--acme--small-gpt";
/// Commits: the tiny-bert revision before `main`, `main`, and small-gpt's `main`.
const OLD: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567";
const MAIN: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";
const GPT_MAIN: &str = "5555555555555555555555555555555555555555";
/// Small files and their git blob ids (`printf ... | git hash-object --stdin`).
const CONFIG: &str = "{\"model_type\": \"bert\", \"hidden_size\": 32}\n";
const CONFIG_ID: &str = "ab3c8e28c73b8b6b3a77fe57668b2336d1ca1dd0";
const README_OLD: &str = "# tiny-bert\nfirst revision\n";
const README_OLD_ID: &str = "424f4938fe1143a89753c2fc9a5017c44bec744a";
const README_MAIN: &str = "# tiny-bert\nsecond revision\n";
const README_MAIN_ID: &str = "37966c6e24dc9557f09e5796191ed75dbb16cd8d";
const GPT_CONFIG: &str = "{\"model_type\": \"gpt2\"}\n";
const GPT_CONFIG_ID: &str = "3914be8a017af6f2a58402c37134858a1cce9b22";
/// CONFIG with one byte changed (`32` -> `33`), and its git blob id.
const CONFIG_CHANGED_ID: &str = "eaa39ab86655ae4abd53d5047963f567cee69e20";

fn sha256(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

fn weights() -> Vec<u8> {
    noise(7, 300_000)
}

fn onnx() -> Vec<u8> {
    noise(8, 70_000)
}

fn link(t: &Tree, rel: &str, target: &str) {
    let path = t.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// The cache: tiny-bert with two snapshots sharing the weights and the config blob,
/// small-gpt with one snapshot and a nested file.
fn cache() -> Tree {
    let t = Tree::new();
    let w = sha256(&weights());
    let o = sha256(&onnx());
    t.file(&format!("{BERT}/blobs/{w}"), weights())
        .file(&format!("{BERT}/blobs/{CONFIG_ID}"), CONFIG)
        .file(&format!("{BERT}/blobs/{README_OLD_ID}"), README_OLD)
        .file(&format!("{BERT}/blobs/{README_MAIN_ID}"), README_MAIN)
        .file(
            &format!("{BERT}/blobs/{}.incomplete", "c".repeat(64)),
            &weights()[..1000],
        )
        .file(&format!("{BERT}/refs/main"), MAIN)
        .file(&format!("{BERT}/.no_exist/{MAIN}/tokenizer.json"), "")
        .file(&format!("{GPT}/blobs/{o}"), onnx())
        .file(&format!("{GPT}/blobs/{GPT_CONFIG_ID}"), GPT_CONFIG)
        .file(&format!("{GPT}/refs/main"), GPT_MAIN)
        .file(&format!(".locks/{BERT}/{w}.lock"), "");
    for (commit, readme) in [(OLD, README_OLD_ID), (MAIN, README_MAIN_ID)] {
        let snap = format!("{BERT}/snapshots/{commit}");
        link(
            &t,
            &format!("{snap}/model.safetensors"),
            &format!("../../blobs/{w}"),
        );
        link(
            &t,
            &format!("{snap}/config.json"),
            &format!("../../blobs/{CONFIG_ID}"),
        );
        link(
            &t,
            &format!("{snap}/README.md"),
            &format!("../../blobs/{readme}"),
        );
    }
    let snap = format!("{GPT}/snapshots/{GPT_MAIN}");
    link(
        &t,
        &format!("{snap}/onnx/model.onnx"),
        &format!("../../../blobs/{o}"),
    );
    link(
        &t,
        &format!("{snap}/config.json"),
        &format!("../../blobs/{GPT_CONFIG_ID}"),
    );
    t
}

fn verify(path: &Path) -> (i32, Value) {
    run_json(&["verify", path.to_str().unwrap()])
}

fn audit(path: &Path) -> (i32, Value) {
    run_json(&["audit", path.to_str().unwrap()])
}

/// (kind, severity, path, expected, actual) of every finding.
fn detailed(report: &Value) -> Vec<(String, String, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                s(&f["kind"]),
                s(&f["severity"]),
                s(&f["path"]),
                s(&f["expected"]),
                s(&f["actual"]),
            )
        })
        .collect()
}

fn incomplete() -> (String, String, String, String, String) {
    (
        "leftover_temp_file".into(),
        "warning".into(),
        format!("{BERT}/blobs/{}.incomplete", "c".repeat(64)),
        String::new(),
        String::new(),
    )
}

/// (repo, commit, refs, intact) of every snapshot `audit --json` lists.
fn snapshots(report: &Value) -> Vec<(String, String, String, bool)> {
    let mut out = Vec::new();
    for repo in report["repos"].as_array().unwrap() {
        for s in repo["snapshots"].as_array().unwrap() {
            let refs: Vec<&str> = s["refs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap())
                .collect();
            out.push((
                repo["repo"].as_str().unwrap().to_string(),
                s["commit"].as_str().unwrap().to_string(),
                refs.join(","),
                s["intact"].as_bool().unwrap(),
            ));
        }
    }
    out
}

fn snap(repo: &str, commit: &str, refs: &str, intact: bool) -> (String, String, String, bool) {
    (repo.into(), commit.into(), refs.into(), intact)
}

#[test]
fn a_clean_cache_verifies_with_one_warning_for_the_interrupted_download() {
    let t = cache();
    let (code, report) = verify(t.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(detailed(&report), [incomplete()]);
    // Every blob read: 4 of tiny-bert, 2 of small-gpt; not the .incomplete, not .locks.
    assert_eq!(report["files_checked"], 6);
    assert_eq!(
        report["bytes_checked"],
        (300_000 + 70_000 + CONFIG.len() + README_OLD.len() + README_MAIN.len() + GPT_CONFIG.len())
            as u64
    );
    // One repository directory given directly: the same checks, paths inside it.
    let (code, report) = verify(&t.join(BERT));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["files_checked"], 4);
    assert_eq!(
        report["findings"][0]["path"],
        format!("blobs/{}.incomplete", "c".repeat(64))
    );
}

#[test]
fn a_changed_byte_in_a_blob_is_a_hash_mismatch_against_its_name() {
    let t = cache();
    let w = sha256(&weights());
    let mut changed = weights();
    changed[123_456] ^= 0x01;
    t.file(&format!("{BERT}/blobs/{w}"), &changed);
    t.file(
        &format!("{BERT}/blobs/{CONFIG_ID}"),
        CONFIG.replace("32", "33"),
    );
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    let mut expected = vec![
        (
            "hash_mismatch".to_string(),
            "error".to_string(),
            format!("{BERT}/blobs/{CONFIG_ID}"),
            CONFIG_ID.to_string(),
            CONFIG_CHANGED_ID.to_string(),
        ),
        (
            "hash_mismatch".into(),
            "error".into(),
            format!("{BERT}/blobs/{w}"),
            w.clone(),
            sha256(&changed),
        ),
        incomplete(),
    ];
    expected.sort();
    let mut found = detailed(&report);
    found.sort();
    assert_eq!(found, expected);
    let message = report["findings"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("acme/tiny-bert: "), "{message}");

    // Both snapshots use both blobs: both broken, and main is one of them.
    let (code, report) = audit(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        snapshots(&report),
        [
            snap("acme/small-gpt", GPT_MAIN, "main", true),
            snap("acme/tiny-bert", OLD, "", false),
            snap("acme/tiny-bert", MAIN, "main", false),
        ]
    );
}

#[test]
fn a_dangling_link_breaks_its_snapshot_only() {
    let t = cache();
    std::fs::remove_file(t.join(&format!("{BERT}/blobs/{README_OLD_ID}"))).unwrap();
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        detailed(&report),
        [
            incomplete(),
            (
                "missing_file".into(),
                "error".into(),
                format!("{BERT}/snapshots/{OLD}/README.md"),
                format!("../../blobs/{README_OLD_ID}"),
                "no file".into(),
            ),
        ]
    );
    // The broken snapshot is one no ref names: audit lists it and exits 0.
    let (code, report) = audit(t.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        snapshots(&report),
        [
            snap("acme/small-gpt", GPT_MAIN, "main", true),
            snap("acme/tiny-bert", OLD, "", false),
            snap("acme/tiny-bert", MAIN, "main", true),
        ]
    );
}

#[test]
fn links_out_of_the_blobs_and_bad_refs_are_findings() {
    let t = cache();
    let snapshot = format!("{GPT}/snapshots/{GPT_MAIN}");
    // Into the other repository's blobs, and out of the cache.
    std::fs::remove_file(t.join(&format!("{snapshot}/config.json"))).unwrap();
    link(
        &t,
        &format!("{snapshot}/config.json"),
        &format!("../../../{BERT}/blobs/{CONFIG_ID}"),
    );
    link(
        &t,
        &format!("{snapshot}/vocab.txt"),
        "../../../../../etc/passwd",
    );
    let missing = "1234567890123456789012345678901234567890";
    t.file(&format!("{GPT}/refs/main"), missing);
    t.file(&format!("{GPT}/refs/v1"), "not a commit\n");
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        detailed(&report),
        [
            (
                "bad_pointer".into(),
                "error".into(),
                format!("{GPT}/refs/main"),
                format!("snapshots/{missing}"),
                "no such snapshot".into(),
            ),
            (
                "bad_pointer".into(),
                "error".into(),
                format!("{GPT}/refs/v1"),
                "a 40-hex commit hash".into(),
                "\"not a commit\"".into(),
            ),
            (
                "bad_pointer".into(),
                "error".into(),
                format!("{snapshot}/config.json"),
                "a blob of this repository (../../blobs/<etag>)".into(),
                format!("../../../{BERT}/blobs/{CONFIG_ID}"),
            ),
            (
                "bad_pointer".into(),
                "error".into(),
                format!("{snapshot}/vocab.txt"),
                "a blob of this repository (../../blobs/<etag>)".into(),
                "../../../../../etc/passwd".into(),
            ),
            incomplete(),
        ]
    );
    let (code, report) = audit(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["ok"], false);
}

#[test]
fn audit_lists_every_snapshot() {
    let t = cache();
    std::fs::remove_file(t.join(&format!("{BERT}/blobs/{README_OLD_ID}"))).unwrap();
    let out = run(&["audit", t.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    let first = lines.next().unwrap();
    assert!(
        first.starts_with(&format!(
            "audited {} (Hugging Face cache): 2 repo(s), 3 snapshot(s), 2 intact, 370.1 kB in ",
            t.path().display()
        )),
        "{stdout}"
    );
    let rest: Vec<&str> = lines.collect();
    assert_eq!(
        rest,
        [
            "  acme/small-gpt  555555555555  refs: main  intact".to_string(),
            "  acme/tiny-bert  0a1b2c3d4e5f  refs: -     BROKEN (1 finding(s))".to_string(),
            format!(
                "      error: {BERT}/snapshots/{OLD}/README.md: missing_file: acme/tiny-bert: the snapshot symlink is dangling: its blob is not in the cache (expected ../../blobs/{README_OLD_ID}, found no file)"
            ),
            "  acme/tiny-bert  9f8e7d6c5b4a  refs: main  intact".to_string(),
            "OK: every snapshot a ref names is intact".to_string(),
        ],
        "{stdout}"
    );
}

#[test]
fn an_empty_cache_is_nothing_to_verify() {
    let t = Tree::new();
    std::fs::create_dir_all(t.join(&format!("{BERT}/blobs"))).unwrap();
    std::fs::create_dir_all(t.join(&format!("{BERT}/snapshots"))).unwrap();
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(findings(&report)[0].0, "nothing_to_verify");
    let (code, _) = run_json(&["verify", t.path().to_str().unwrap(), "--allow-empty"]);
    assert_eq!(code, 0);
}

/// huggingface_hub 2.x keeps Xet files once per cache, in `<cache>/blobs/<2 hex>/<xet
/// hash>` (beside a `.huggingface-shared-blobs` marker), and links each repository's
/// `blobs/<etag>` to it: the content is checked through the link against the etag.
#[test]
fn blobs_linked_to_the_shared_store_are_hashed_through_the_link() {
    let t = cache();
    let o = sha256(&onnx());
    let xet = "ab".to_string() + &"7".repeat(62);
    t.file("blobs/.huggingface-shared-blobs", "1\n")
        .file(&format!("blobs/ab/{xet}"), onnx());
    std::fs::remove_file(t.join(&format!("{GPT}/blobs/{o}"))).unwrap();
    link(
        &t,
        &format!("{GPT}/blobs/{o}"),
        &format!("../../blobs/ab/{xet}"),
    );
    let (code, report) = verify(t.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["files_checked"], 6);

    let mut changed = onnx();
    changed[10] ^= 0x80;
    t.file(&format!("blobs/ab/{xet}"), &changed);
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        detailed(&report)[0],
        (
            "hash_mismatch".into(),
            "error".into(),
            format!("{GPT}/blobs/{o}"),
            o.clone(),
            sha256(&changed),
        )
    );
    std::fs::remove_file(t.join(&format!("blobs/ab/{xet}"))).unwrap();
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report)[0],
        ("missing_file".into(), format!("{GPT}/blobs/{o}"), None)
    );
    std::fs::remove_file(t.join(&format!("{GPT}/blobs/{o}"))).unwrap();
    link(&t, &format!("{GPT}/blobs/{o}"), "/etc/hostname");
    let (code, report) = verify(t.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report)[0],
        ("bad_pointer".into(), format!("{GPT}/blobs/{o}"), None)
    );
}

#[test]
fn a_leftover_ref_update_is_a_warning_not_a_ref() {
    let t = cache();
    t.file(&format!("{GPT}/refs/main.0badcafe.tmp"), GPT_MAIN);
    let (code, report) = verify(t.path());
    assert_eq!(code, 0, "{report:#}");
    assert!(
        findings(&report).contains(&(
            "leftover_temp_file".into(),
            format!("{GPT}/refs/main.0badcafe.tmp"),
            None
        )),
        "{report:#}"
    );
    let (_, report) = audit(t.path());
    assert_eq!(
        report["repos"][0]["snapshots"][0]["refs"],
        serde_json::json!(["main"])
    );
}
