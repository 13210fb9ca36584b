use super::*;
use shardsmith_manifest::{Digester, FileEntry, InputSummary};

fn manifest() -> Manifest {
    let mut m = Manifest::new(ManifestKind::Pack, 1 << 20, Vec::new());
    m.format = Some("webdataset".into());
    m.options.insert("shard_size".into(), 1024.into());
    m.input = Some(InputSummary {
        files: 2,
        bytes: 10,
        listing_sha256: "ab".repeat(32),
    });
    m
}

#[test]
fn a_fingerprint_is_the_run_and_only_the_run() {
    let base = fingerprint(&manifest(), None);
    assert_eq!(base.len(), 64);
    // What the run wrote does not move it: a resumed run has the same fingerprint.
    let mut written = manifest();
    written
        .files
        .push(FileEntry::new("a.tar", &Digester::new(1 << 20).finish()));
    written.recount();
    assert_eq!(fingerprint(&written, None), base);
    // Each part of the run does.
    let mut other = manifest();
    other.format = Some("parquet".into());
    assert_ne!(fingerprint(&other, None), base);
    let mut other = manifest();
    other.options.insert("shard_size".into(), 2048.into());
    assert_ne!(fingerprint(&other, None), base);
    let mut other = manifest();
    other.input.as_mut().unwrap().bytes = 11;
    assert_ne!(fingerprint(&other, None), base);
    let mut other = manifest();
    other.tool_version = "0.0.0-other".into();
    assert_ne!(fingerprint(&other, None), base);
    assert_ne!(fingerprint(&manifest(), Some("tokenize")), base);
}

#[test]
fn tokenize_keeps_the_fingerprint_its_runs_recorded() {
    // The formula tokenize had before it moved here: a run killed under it resumes.
    let m = manifest();
    let before = serde_json::json!({
        "tool_version": m.tool_version,
        "kind": "tokenize",
        "format": m.format,
        "options": m.options,
        "input": m.input,
    });
    let mut out = Vec::new();
    shardsmith_manifest::canonical_json(&before, &mut out);
    assert_eq!(
        fingerprint(&m, Some("tokenize")),
        shardsmith_manifest::sha256_hex(&out)
    );
}
