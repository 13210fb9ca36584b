//! `tokenize --dedup`: documents whose text repeats an earlier one's are left out and
//! listed by place; near-duplicates are kept; the same files for any `--jobs` and after
//! a killed run resumes (documents cut between llm.c files included).

use crate::util::*;

/// `a.jsonl`: 3000 lines over 700 texts (each repeated) plus one text differing by a
/// trailing space; two text files with the same text.
fn corpus() -> Tree {
    let t = Tree::new();
    let mut lines = String::new();
    for i in 0..3000 {
        lines.push_str(&format!(
            "{{\"text\": \"document {} says {}\"}}\n",
            i % 700,
            "words ".repeat(i % 700 % 40)
        ));
    }
    lines.push_str("{\"text\": \"document 1 says words  \"}\n");
    t.file("in/a.jsonl", lines);
    t.file("in/b.txt", "the same text in two files\n");
    t.file("in/c.txt", "the same text in two files\n");
    t
}

fn args(t: &Tree, out: &str, jobs: &str, format: &str) -> Vec<String> {
    [
        "tokenize",
        &t.s("in"),
        &t.s(out),
        "--tokenizer",
        "gpt2",
        "--format",
        format,
        "--shard-tokens",
        "3000",
        "--dedup",
        "-j",
        jobs,
    ]
    .map(String::from)
    .to_vec()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn repeated_texts_are_left_out_and_listed_by_place_the_same_for_any_jobs() {
    let t = corpus();
    let (code, report) = run_json(&strs(&args(&t, "one", "1", "megatron")));
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["documents"], 700 + 1 + 1);
    assert_eq!(report["duplicates"]["count"], 2300 + 1);
    let m = manifest(&t.join("one"));
    let d = &m["duplicates"];
    assert_eq!(d["count"], 2301);
    let a = format!("{}/a.jsonl", t.s("in"));
    assert_eq!(
        d["first"][0],
        serde_json::json!({"key": format!("{a}:701"), "of": format!("{a}:1")})
    );
    let last = d["first"].as_array().unwrap().len();
    assert_eq!(last, 1000, "the first 1,000 are listed");
    assert_eq!(m["options"]["dedup"], true);
    for jobs in ["2", "3"] {
        let out = format!("j{jobs}");
        let o = run(&strs(&args(&t, &out, jobs, "megatron")));
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(
            snapshot(&t.join("one")),
            snapshot(&t.join(&out)),
            "-j {jobs}"
        );
    }
    let o = run(&strs(&args(&t, "text", "2", "megatron")));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("duplicates 2301 document(s)"), "{stdout}");
    assert!(
        stdout.contains(&format!("{a}:701 (same as {a}:1)")),
        "{stdout}"
    );
    // The text file repeating another is named by its path.
    let (_, report) = run_json(&[
        "tokenize",
        &t.s("in/b.txt"),
        &t.s("in/c.txt"),
        &t.s("txt"),
        "--tokenizer",
        "gpt2",
        "--dedup",
    ]);
    assert_eq!(report["documents"], 1, "{report}");
    let first = &report["duplicates"]["first"][0];
    assert!(
        first["key"].as_str().unwrap().ends_with("c.txt")
            && first["of"].as_str().unwrap().ends_with("b.txt"),
        "{first}"
    );
    // Without --dedup every document is written.
    let (_, report) = run_json(&["tokenize", &t.s("in"), &t.s("all"), "--tokenizer", "gpt2"]);
    assert_eq!(report["documents"], 3003);
    assert!(report.get("duplicates").is_none());
}

#[test]
fn a_killed_dedup_run_resumes_to_the_same_files() {
    let t = corpus();
    // llm.c files cut documents between files: a resumed run starts inside one.
    let whole = args(&t, "whole", "2", "llmc");
    let o = run(&strs(&whole));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let want = snapshot(&t.join("whole"));
    let killed_args = args(&t, "killed", "2", "llmc");
    let state = t.join("killed/.shardsmith-state");
    let killed = run_and_kill_when(&strs(&killed_args), &[], || {
        std::fs::read_dir(&state)
            .map(|d| d.count().saturating_sub(1))
            .unwrap_or(0)
            >= 3
    });
    let (code, report) = run_json(&strs(&killed_args));
    assert_eq!(code, 0, "{report}");
    if killed {
        eprintln!("killed, resumed {} file(s)", report["shards_resumed"]);
    }
    assert!(snapshot(&t.join("killed")) == want, "killed: {killed}");
}
