//! `tokenize` reads its input on every worker: plain JSONL cut into ranges of 1 MiB
//! (each worker finds the lines that start in its range), Parquet by row groups, a
//! compressed file on one worker at a time. Lines across every cut, any `--jobs`, a
//! kill midway: the same bytes as one thread reading in order.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::util::*;

const MIB: usize = 1 << 20;

/// A JSON line of exactly `len` bytes (with its `\n`) and its text.
fn filler(len: usize, seed: usize) -> (String, String) {
    let body: String = (0..len - 11)
        .map(|i| {
            if (i + seed) % 6 == 5 {
                ' '
            } else {
                (b'a' + ((i * 7 + seed) % 26) as u8) as char
            }
        })
        .collect();
    (format!("{{\"txt\":\"{body}\"}}\n"), body)
}

/// Appends JSON lines to `a` (texts to `docs`) until the next line starts at `at`.
fn fill_to(a: &mut String, docs: &mut Vec<String>, at: usize) {
    while a.len() < at {
        let left = at - a.len();
        let len = match left {
            ..=40_000 => left,
            40_001..40_012 => 30_000,
            _ => 40_000,
        };
        let (line, text) = filler(len, a.len());
        a.push_str(&line);
        docs.push(text);
    }
    assert_eq!(a.len(), at);
}

/// A plain JSONL file of about 6 MiB in which each 1 MiB cut falls where it matters,
/// and the documents it holds, in order; the lines of the malformed records left out.
fn across_cuts() -> (String, Vec<String>, Vec<(u64, &'static str)>) {
    let mut a = String::new();
    let mut docs = Vec::new();
    let mut bad = Vec::new();
    let lines = |a: &String| a.matches('\n').count() as u64;
    // A line starts exactly at the first cut.
    fill_to(&mut a, &mut docs, MIB);
    // The second cut falls on a line's `\n`; a malformed line follows it.
    fill_to(&mut a, &mut docs, 2 * MIB - 20);
    a.push_str("{\"txt\":\"ends at it\"}\n");
    docs.push("ends at it".into());
    assert_eq!(a.len(), 2 * MIB + 1);
    a.push_str("{\"txt\": \"cut off\n");
    bad.push((lines(&a), "not a JSON object"));
    // The third cut falls between a `\r` and its `\n`; an empty line follows.
    fill_to(&mut a, &mut docs, 3 * MIB - 21);
    a.push_str("{\"txt\":\"crlf at it\"}\r\n");
    docs.push("crlf at it".into());
    a.push('\n');
    bad.push((lines(&a), "empty line"));
    // A line of 2.6 MiB of multi-byte characters and escapes covers the fourth and
    // fifth cuts whole.
    let long: String = "é日本 \\\"x\\\" ".repeat(2_600_000 / 16);
    a.push_str(&format!("{{\"id\": 7, \"txt\": \"{long}\"}}\n"));
    docs.push(long.replace("\\\"", "\""));
    // An empty line starts at the sixth cut; the file ends without a newline.
    fill_to(&mut a, &mut docs, 6 * MIB);
    a.push('\n');
    bad.push((lines(&a), "empty line"));
    a.push_str("{\"txt\": null}\n");
    bad.push((lines(&a), "is null"));
    a.push_str("{\"txt\":\"the end\"}");
    docs.push("the end".into());
    (a, docs, bad)
}

/// `in/` with plain JSONL cut across (`a.jsonl`), a gzip'd file, a Parquet file of
/// three row groups made by `pack`, a text file and a small JSONL file with CRLF, empty
/// lines and no trailing newline; the documents in input order, and the malformed
/// records as (`FILE line N: `, what their reason says).
fn inputs(t: &Tree) -> (Vec<String>, Vec<(String, &'static str)>) {
    let (a, mut docs, bad) = across_cuts();
    t.file("in/a.jsonl", &a);
    let gz_docs: Vec<String> = (0..40)
        .map(|i| format!("gz {i} {}", "z".repeat(i * 31)))
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for d in &gz_docs {
        gz.write_all((json!({ "txt": d }).to_string() + "\n").as_bytes())
            .unwrap();
    }
    t.file("in/b.jsonl.gz", gz.finish().unwrap());
    docs.extend(gz_docs);
    let rows: Vec<String> = (0..7)
        .map(|i| format!("row {i}: {}", "ü ".repeat(i * 50)))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        t.file(&format!("raw/{i:04}.txt"), row);
    }
    let o = run(&[
        "pack",
        &t.s("raw"),
        &t.s("pq"),
        "--format",
        "parquet",
        "--row-group-size",
        "3",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::copy(t.join("pq/shard-000000.parquet"), t.join("in/c.parquet")).unwrap();
    docs.extend(rows);
    t.file("in/d.txt", "a text file\r\nwhole");
    docs.push("a text file\r\nwhole".into());
    t.file(
        "in/e.jsonl",
        "\r\n{\"txt\": \"crlf\"}\r\n\n{\"txt\": \"no newline\"}",
    );
    docs.extend(["crlf".to_string(), "no newline".to_string()]);
    let mut skipped: Vec<(String, &str)> = bad
        .into_iter()
        .map(|(line, why)| (format!("a.jsonl line {line}: "), why))
        .collect();
    skipped.extend([
        ("e.jsonl line 1: ".into(), "empty line"),
        ("e.jsonl line 3: ".into(), "empty line"),
    ]);
    (docs, skipped)
}

fn tokenize(t: &Tree, out: &str, format: &str, jobs: &str) -> serde_json::Value {
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("in"),
        &t.s(out),
        "-t",
        "gpt2",
        "--field",
        "txt",
        "--format",
        format,
        "--shard-tokens",
        "200k",
        "-j",
        jobs,
    ]);
    assert_eq!(code, 0, "{report}");
    report
}

#[test]
fn lines_across_every_cut_give_the_same_bytes_whatever_the_jobs() {
    let t = Tree::new();
    let (docs, skipped) = inputs(&t);
    let enc = tiktoken_rs::r50k_base().unwrap();
    let want: Vec<u32> = docs
        .iter()
        .flat_map(|d| enc.encode_ordinary(d).into_iter().chain([50256]))
        .collect();
    for format in ["nanogpt", "megatron"] {
        let reference = format!("{format}-1");
        let report = tokenize(&t, &reference, format, "1");
        assert_eq!(report["documents"], docs.len(), "{format}");
        let found: Vec<String> = report["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let path = s["path"].as_str().unwrap();
                let name = Path::new(path).file_name().unwrap().to_string_lossy();
                format!("{name} {}", s["reason"].as_str().unwrap())
            })
            .collect();
        assert_eq!(found.len(), skipped.len(), "{found:?}");
        for (found, (at, why)) in found.iter().zip(&skipped) {
            assert!(
                found.starts_with(at) && found.contains(why),
                "{found} is not {at}{why}"
            );
        }
        let want_snapshot = snapshot(&t.join(&reference));
        if format == "nanogpt" {
            let ids: Vec<u32> = want_snapshot
                .iter()
                .filter(|(name, _)| name.ends_with(".bin"))
                .flat_map(|(_, bytes)| bytes.chunks_exact(2))
                .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                .collect();
            assert!(
                ids == want,
                "the documents in input order, as tiktoken encodes them"
            );
            assert!(want_snapshot.len() > 8, "several files");
        }
        for jobs in ["2", "3", "7"] {
            let out = format!("{format}-{jobs}");
            tokenize(&t, &out, format, jobs);
            assert!(
                snapshot(&t.join(&out)) == want_snapshot,
                "{format} -j {jobs}"
            );
        }
    }
}

#[test]
fn killed_parallel_runs_of_many_files_resume_byte_identical() {
    let t = Tree::new();
    inputs(&t);
    let args = |out: &str, jobs: &'static str| {
        [
            "tokenize".to_string(),
            t.s("in"),
            t.s(out),
            "-t".into(),
            "gpt2".into(),
            "--field".into(),
            "txt".into(),
            "--format".into(),
            "llmc".into(),
            "--shard-tokens".into(),
            "20k".into(),
            "-j".into(),
            jobs.into(),
        ]
    };
    let whole = args("whole", "1");
    let o = run(&whole.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let want = snapshot(&t.join("whole"));
    assert!(want.len() > 40, "{} files", want.len());
    for (round, (jobs, shards_before_kill)) in [("3", 5usize), ("7", 25)].into_iter().enumerate() {
        let out = format!("killed{round}");
        let args = args(&out, jobs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let state = t.join(&format!("{out}/.shardsmith-state"));
        let killed = run_and_kill_when(&args, &[], || {
            std::fs::read_dir(&state)
                .map(|d| d.count().saturating_sub(1))
                .unwrap_or(0)
                >= shards_before_kill
        });
        let (code, report) = run_json(&args);
        assert_eq!(code, 0, "{report}");
        if killed {
            eprintln!(
                "-j {jobs}: killed, resumed {} file(s)",
                report["shards_resumed"]
            );
        }
        assert!(
            snapshot(&t.join(&out)) == want,
            "-j {jobs} (killed: {killed})"
        );
    }
}
