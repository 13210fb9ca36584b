//! A failed run must not lock its output, and no command reads shardsmith's own files
//! as input.

use crate::tokenize::basic::{jsonl, words};
use crate::util::*;

fn state(dir: &std::path::Path) -> bool {
    dir.join(".shardsmith-state").exists()
}

#[test]
fn a_run_that_fails_before_writing_leaves_nothing_behind() {
    let t = Tree::new();
    t.file("blob.bin", [0xffu8, 0xfe, 0x00, 0x80].repeat(100));
    let o = run(&["tokenize", &t.s("blob.bin"), &t.s("out"), "-t", "gpt2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("error: no documents to tokenize in"),
        "{}",
        text(&o.stderr)
    );
    assert!(!t.join("out").exists(), "no output directory, no state");
    // The output is free for any later run.
    t.file("corpus.jsonl", jsonl(&[words(1, 50)]));
    let o = run(&["tokenize", &t.s("corpus.jsonl"), &t.s("out"), "-t", "gpt2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));

    std::fs::create_dir(t.join("empty")).unwrap();
    let o = run(&["pack", &t.s("empty"), &t.s("shards/a")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !t.join("shards").exists(),
        "directories made for the run are removed"
    );
    // An existing output directory stays, without state.
    std::fs::create_dir(t.join("kept")).unwrap();
    let o = run(&["tokenize", &t.s("blob.bin"), &t.s("kept"), "-t", "gpt2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(t.join("kept").is_dir() && !state(&t.join("kept")));
}

#[test]
fn an_output_locked_by_an_older_failed_run_is_usable() {
    let t = Tree::new();
    t.file("out/.shardsmith-state/run.json", r#"{"fingerprint": "0"}"#);
    t.file("corpus.jsonl", jsonl(&[words(2, 50)]));
    let o = run(&["tokenize", &t.s("corpus.jsonl"), &t.s("out"), "-t", "gpt2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!state(&t.join("out")));
}

#[test]
fn a_run_that_fails_after_committing_says_how_to_go_on() {
    let t = Tree::new();
    // Many documents then a malformed record: --strict stops after shards were written.
    let mut corpus = jsonl(&(0..400).map(|i| words(i, 200)).collect::<Vec<_>>());
    corpus.push_str("{not json\n");
    t.file("corpus.jsonl", corpus);
    let args = [
        "tokenize",
        &t.s("corpus.jsonl"),
        &t.s("out"),
        "-t",
        "gpt2",
        "--shard-tokens",
        "10k",
        "--strict",
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains(&format!(
            "\nhint: `{}` keeps the shards this run finished: the same command resumes from them once the cause is fixed; to start over with other input or options, add --force\n",
            t.s("out")
        )),
        "{stderr}"
    );
    assert!(state(&t.join("out")), "the state stays for a resume");
    // Other options that change the output are refused unless --force...
    let mut other: Vec<&str> = args[..6].to_vec();
    other.push("20k");
    let o = run(&other);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("holds an unfinished tokenize run with other options"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !text(&o.stderr).contains("hint: "),
        "the refusal says how to go on itself"
    );
    // ...while dropping --strict (which changes no byte) resumes the finished shards.
    let (code, report) = run_json(&args[..7]);
    assert_eq!(code, 0, "{report}");
    assert!(report["shards_resumed"].as_u64().unwrap() > 0, "{report}");
    other.push("--force");
    let o = run(&other);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn shardsmith_metadata_is_never_read_as_input() {
    let t = Tree::new();
    let pq = t.s("pq");
    let o = run(&[
        "pack",
        samples().to_str().unwrap(),
        &pq,
        "--format",
        "parquet",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (code, report) = run_json(&["tokenize", &pq, &t.s("tok"), "-t", "gpt2", "--field", "txt"]);
    assert_eq!(code, 0, "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .all(|s| !s["path"].as_str().unwrap().contains("manifest.json")),
        "{report}"
    );
    // A directory of WebDataset shards packed again: its samples are the data (read out
    // of the shards), the manifest and SHA256SUMS beside them are not; read as raw
    // files, the one shard is the data.
    let wds = t.s("wds");
    let (code, first) = run_json(&["pack", samples().to_str().unwrap(), &wds]);
    assert_eq!(code, 0, "{first}");
    let (code, report) = run_json(&["pack", &wds, &t.s("again")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["input_files"], first["input_files"], "{report}");
    assert_eq!(report["samples"], first["samples"], "{report}");
    assert_eq!(report["skipped"].as_array().unwrap().len(), 0, "{report}");
    let (code, report) = run_json(&["pack", &wds, &t.s("raw"), "--input-format", "files"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["input_files"], 1, "{report}");
    assert_eq!(report["skipped"].as_array().unwrap().len(), 0, "{report}");
}
