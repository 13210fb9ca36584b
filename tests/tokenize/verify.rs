//! `shardsmith verify` on `tokenize` output: each kind of damage found as an exact
//! finding (kind, file, offset) and exit code 1.

use std::path::Path;

use crate::tokenize::basic::{jsonl, words};
use crate::util::*;

#[test]
fn verify_catches_truncation_edited_index_and_out_of_vocabulary_ids() {
    let t = Tree::new();
    let docs: Vec<String> = (0..50).map(|i| words(i, 300)).collect();
    t.file("c.jsonl", jsonl(&docs));
    let setup = |name: &str, format: &str| {
        let o = run(&[
            "tokenize",
            &t.s("c.jsonl"),
            &t.s(name),
            "-t",
            "gpt2",
            "--format",
            format,
            "--shard-tokens",
            "6000",
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        t.join(name)
    };
    let kinds = |dir: &Path, extra: &[&str]| -> Vec<(String, String, Option<u64>)> {
        let mut args = vec!["verify", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (code, report) = run_json(&args);
        assert_eq!(code, 1, "{report}");
        findings(&report)
    };
    let has = |found: &[(String, String, Option<u64>)], kind: &str, path: &str| {
        assert!(
            found.iter().any(|f| f.0 == kind && f.1 == path),
            "{kind} {path}: {found:?}"
        );
    };
    // A truncated .bin: shorter than the manifest and than its index says.
    let d = setup("trunc", "megatron");
    let bin = d.join("tokens_000001.bin");
    let len = std::fs::metadata(&bin).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&bin)
        .unwrap()
        .set_len(len - 6)
        .unwrap();
    let found = kinds(&d, &[]);
    has(&found, "size_mismatch", "tokens_000001.bin");
    has(&found, "truncated", "tokens_000001.bin");
    std::fs::remove_file(d.join("manifest.json")).unwrap();
    std::fs::remove_file(d.join("SHA256SUMS")).unwrap();
    let found = kinds(&d, &[]);
    has(&found, "truncated", "tokens_000001.bin");
    // An edited .idx: a length changed, so the pointers no longer add up.
    let d = setup("idx", "megatron");
    let idx = d.join("tokens_000000.idx");
    let mut bytes = std::fs::read(&idx).unwrap();
    bytes[34] ^= 1;
    std::fs::write(&idx, bytes).unwrap();
    let found = kinds(&d, &[]);
    has(&found, "hash_mismatch", "tokens_000000.idx");
    has(&found, "bad_index", "tokens_000000.idx");
    // A decreasing document index.
    let d = setup("docs", "megatron");
    let idx = d.join("tokens_000000.idx");
    let mut bytes = std::fs::read(&idx).unwrap();
    let s = u64::from_le_bytes(bytes[18..26].try_into().unwrap()) as usize;
    let at = 34 + 12 * s + 8 * 2;
    bytes[at..at + 8].copy_from_slice(&0i64.to_le_bytes());
    std::fs::write(&idx, bytes).unwrap();
    has(&kinds(&d, &[]), "bad_index", "tokens_000000.idx");
    // An id outside GPT-2's vocabulary, and an EOD overwritten, in each format.
    for format in ["nanogpt", "megatron", "llmc"] {
        let d = setup(&format!("oov-{format}"), format);
        let bin = d.join("tokens_000000.bin");
        let mut bytes = std::fs::read(&bin).unwrap();
        let at = if format == "llmc" { 1024 + 20 } else { 20 };
        bytes[at..at + 2].copy_from_slice(&60000u16.to_le_bytes());
        std::fs::write(&bin, &bytes).unwrap();
        let found = kinds(&d, &[]);
        assert!(
            found.contains(&(
                "token_out_of_range".into(),
                "tokens_000000.bin".into(),
                Some(at as u64)
            )),
            "{format}: {found:?}"
        );
        let d = setup(&format!("eod-{format}"), format);
        let bin = d.join("tokens_000000.bin");
        let mut bytes = std::fs::read(&bin).unwrap();
        let start = if format == "llmc" { 1024 } else { 0 };
        let eod = bytes[start..]
            .chunks_exact(2)
            .position(|c| u16::from_le_bytes([c[0], c[1]]) == 50256)
            .unwrap();
        let at = start + 2 * eod;
        bytes[at..at + 2].copy_from_slice(&13u16.to_le_bytes());
        std::fs::write(&bin, &bytes).unwrap();
        has(&kinds(&d, &[]), "eod_mismatch", "tokens_000000.bin");
    }
    // llm.c: a header whose count disagrees with the size.
    let d = setup("hdr", "llmc");
    let bin = d.join("tokens_000000.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes[8..12].copy_from_slice(&5999i32.to_le_bytes());
    std::fs::write(&bin, &bytes).unwrap();
    std::fs::remove_file(d.join("manifest.json")).unwrap();
    std::fs::remove_file(d.join("SHA256SUMS")).unwrap();
    has(&kinds(&d, &[]), "trailing_data", "tokens_000000.bin");
}
