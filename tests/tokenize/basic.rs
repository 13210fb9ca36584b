//! `shardsmith tokenize` driven end to end: the three formats read back byte by byte and
//! compared with `tiktoken-rs` (OpenAI's own core), shards, determinism, resume after a
//! kill, bad input, and `verify` catching damaged token files.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::util::*;

/// Documents covering the cases that matter: empty, whitespace only, non-ASCII, emoji,
/// CJK, combining marks, literal special tokens, code, a long run without spaces.
pub fn documents() -> Vec<String> {
    let mut docs: Vec<String> = [
        "Hello world",
        "",
        "   ",
        "naïve café e\u{301}cole — “quotes” it's DON'T",
        "中文字符和English混合；日本語のテキスト。한국어",
        "😀 emoji 👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
        "<|endoftext|> must stay text <|endofprompt|>",
        "def f(x):\n\treturn x ** 2  # square\n\n\n    pass\r\n",
        "numbers 1234567890 ²³ Ⅻ ١٢٣٤",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    docs.push("x".repeat(3000));
    docs.push(words(7, 20_000));
    docs
}

/// Deterministic pseudo-text of `n` words.
pub fn words(seed: u64, n: usize) -> String {
    const WORDS: [&str; 16] = [
        "the",
        "tokenizer",
        "Δelta",
        "shard",
        "über",
        "42",
        "x_y",
        "(",
        ")",
        "\n",
        "don't",
        "GPU",
        "über-fast",
        "  ",
        "ratio",
        "¿qué?",
    ];
    let bytes = noise(seed, n);
    let mut out = String::new();
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[usize::from(*b) % WORDS.len()]);
    }
    out
}

/// A JSONL file of `docs` under `text`, with an `id` field before it.
pub fn jsonl(docs: &[String]) -> String {
    docs.iter()
        .enumerate()
        .map(|(i, d)| json!({"id": i, "text": d}).to_string() + "\n")
        .collect()
}

fn gpt2() -> tiktoken_rs::CoreBPE {
    tiktoken_rs::r50k_base().unwrap()
}

fn u16s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(2)
        .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
        .collect()
}

/// The documents of a Megatron prefix, read from the format description.
fn read_megatron(prefix: &Path) -> Vec<Vec<u32>> {
    let idx = std::fs::read(prefix.with_extension("idx")).unwrap();
    let bin = std::fs::read(prefix.with_extension("bin")).unwrap();
    assert_eq!(&idx[..9], b"MMIDIDX\x00\x00");
    let u64_at = |at: usize| u64::from_le_bytes(idx[at..at + 8].try_into().unwrap());
    assert_eq!(u64_at(9), 1);
    assert_eq!(idx[17], 8, "uint16 for GPT-2's vocabulary");
    let (s, d) = (u64_at(18) as usize, u64_at(26) as usize);
    assert_eq!(idx.len(), 34 + 12 * s + 8 * d, "no trailing bytes");
    let lens: Vec<usize> = (0..s)
        .map(|k| i32::from_le_bytes(idx[34 + 4 * k..38 + 4 * k].try_into().unwrap()) as usize)
        .collect();
    let ptrs: Vec<usize> = (0..s)
        .map(|k| u64_at(34 + 4 * s + 8 * k) as usize)
        .collect();
    let bounds: Vec<usize> = (0..d)
        .map(|k| u64_at(34 + 12 * s + 8 * k) as usize)
        .collect();
    let mut running = 0;
    for k in 0..s {
        assert_eq!(ptrs[k], running);
        running += 2 * lens[k];
    }
    assert_eq!(running, bin.len());
    assert_eq!((bounds[0], bounds[d - 1]), (0, s));
    let toks = u16s(&bin);
    bounds
        .windows(2)
        .map(|w| {
            (w[0]..w[1])
                .flat_map(|k| toks[ptrs[k] / 2..ptrs[k] / 2 + lens[k]].to_vec())
                .collect()
        })
        .collect()
}

#[test]
fn three_formats_hold_tiktokens_ids_as_each_consumer_expects() {
    let docs = documents();
    let t = Tree::new();
    t.file("in/c.jsonl", jsonl(&docs));
    let enc = gpt2();
    let want: Vec<Vec<u32>> = docs.iter().map(|d| enc.encode_ordinary(d)).collect();
    let eot = 50256;

    let (code, report) = run_json(&[
        "tokenize",
        &t.s("in"),
        &t.s("mega"),
        "-t",
        "gpt2",
        "--format",
        "megatron",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["documents"], docs.len());
    // Megatron: a document per entry, EOD appended, an empty document has no sequence.
    let got = read_megatron(&t.join("mega/tokens_000000"));
    assert_eq!(got.len(), docs.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let mut w = w.clone();
        if !w.is_empty() {
            w.push(eot);
        }
        assert_eq!(g, &w, "megatron document {i}");
    }

    // nanoGPT: ids + EOT for every document (empty ones too), raw uint16.
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("in"),
        &t.s("nano"),
        "-t",
        "gpt2",
        "--format",
        "nanogpt",
    ]);
    assert_eq!(code, 0, "{report}");
    let stream: Vec<u32> = want
        .iter()
        .flat_map(|w| w.iter().copied().chain([eot]))
        .collect();
    assert_eq!(
        u16s(&std::fs::read(t.join("nano/tokens_000000.bin")).unwrap()),
        stream
    );
    assert_eq!(report["tokens"], stream.len());

    // llm.c: EOT prepended, 1024-byte header with magic, version and count; exact shards.
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("in"),
        &t.s("llmc"),
        "-t",
        "gpt2",
        "--format",
        "llmc",
        "--shard-tokens",
        "4000",
    ]);
    assert_eq!(code, 0, "{report}");
    let stream: Vec<u32> = want
        .iter()
        .flat_map(|w| [eot].into_iter().chain(w.iter().copied()))
        .collect();
    let mut joined = Vec::new();
    let files = report["files"].as_u64().unwrap() as usize;
    assert_eq!(files, stream.len().div_ceil(4000));
    for i in 0..files {
        let bytes = std::fs::read(t.join(&format!("llmc/tokens_{i:06}.bin"))).unwrap();
        let header: Vec<i32> = bytes[..1024]
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let count = if i + 1 < files {
            4000
        } else {
            stream.len() - 4000 * (files - 1)
        };
        assert_eq!(&header[..3], [20240520, 1, count as i32]);
        assert!(header[3..].iter().all(|&w| w == 0));
        assert_eq!(bytes.len(), 1024 + 2 * count);
        joined.extend(u16s(&bytes[1024..]));
    }
    assert_eq!(joined, stream, "shards concatenate to the stream");
    for dir in ["mega", "nano", "llmc"] {
        let o = run(&["verify", &t.s(dir)]);
        assert_eq!(o.status.code(), Some(0), "{dir}: {}", text(&o.stdout));
    }
}

#[test]
fn wide_vocabularies_get_wide_tokens_and_specials_are_text_unless_allowed() {
    let t = Tree::new();
    t.file("c.jsonl", jsonl(&documents()));
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("m"),
        "-t",
        "cl100k_base",
        "--format",
        "megatron",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["dtype"], "int32");
    assert_eq!(std::fs::read(t.join("m/tokens_000000.idx")).unwrap()[17], 4);
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("n"),
        "-t",
        "o200k_base",
        "--format",
        "nanogpt",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["dtype"], "uint32");
    let ids: Vec<u32> = std::fs::read(t.join("n/tokens_000000.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let docs = documents();
    assert_eq!(
        ids.iter().filter(|&&i| i == 199999).count(),
        docs.len(),
        "one EOT per document, none from the text"
    );
    let (code, _) = run_json(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("s"),
        "-t",
        "o200k_base",
        "--format",
        "nanogpt",
        "--allow-special",
    ]);
    assert_eq!(code, 0);
    let ids = std::fs::read(t.join("s/tokens_000000.bin")).unwrap();
    let eots = ids
        .chunks_exact(4)
        .filter(|c| u32::from_le_bytes((*c).try_into().unwrap()) == 199999)
        .count();
    assert_eq!(
        eots,
        docs.len() + 1,
        "the literal <|endoftext|> became the special token"
    );
    let o = run(&["verify", &t.s("s")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

#[test]
fn compressed_jsonl_and_text_files_in_path_order() {
    let t = Tree::new();
    let docs = documents();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(jsonl(&docs[..4]).as_bytes()).unwrap();
    t.file("in/a.jsonl.gz", gz.finish().unwrap());
    t.file(
        "in/b.jsonl.zst",
        zstd::encode_all(jsonl(&docs[4..8]).as_bytes(), 3).unwrap(),
    );
    t.file("in/c.txt", &docs[8]);
    t.file("in/d/e.md", &docs[9]);
    t.file("in/ignored.csv", "not an input");
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("in"),
        &t.s("o"),
        "-t",
        "gpt2",
        "--format",
        "nanogpt",
        "--no-eod",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["input_files"], 4);
    let enc = gpt2();
    let want: Vec<u32> = docs[..10]
        .iter()
        .flat_map(|d| enc.encode_ordinary(d))
        .collect();
    assert_eq!(
        u16s(&std::fs::read(t.join("o/tokens_000000.bin")).unwrap()),
        want
    );
}

#[test]
fn output_is_identical_whatever_the_thread_count() {
    let t = Tree::new();
    let docs: Vec<String> = (0..300)
        .map(|i| words(i, 50 + (i as usize * 37) % 900))
        .collect();
    t.file("c.jsonl", jsonl(&docs));
    for format in ["megatron", "nanogpt", "llmc"] {
        let mut snapshots = Vec::new();
        for jobs in ["1", "2", "5"] {
            let out = t.s(&format!("{format}-{jobs}"));
            let o = run(&[
                "tokenize",
                &t.s("c.jsonl"),
                &out,
                "-t",
                "gpt2",
                "--format",
                format,
                "--shard-tokens",
                "10k",
                "-j",
                jobs,
            ]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            snapshots.push(snapshot(Path::new(&out)));
        }
        assert!(snapshots[0].len() > 8, "{format}: several shards");
        assert_eq!(snapshots[0], snapshots[1], "{format}");
        assert_eq!(snapshots[0], snapshots[2], "{format}");
    }
}

#[test]
fn megatron_shards_end_between_documents() {
    let t = Tree::new();
    let docs: Vec<String> = (0..40).map(|i| words(i, 400)).collect();
    t.file("c.jsonl", jsonl(&docs));
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("m"),
        "-t",
        "gpt2",
        "--shard-tokens",
        "3000",
    ]);
    assert_eq!(code, 0, "{report}");
    let m = manifest(&t.join("m"));
    let mut all = Vec::new();
    for entry in m["files"].as_array().unwrap() {
        let path = entry["path"].as_str().unwrap();
        if let Some(prefix) = path.strip_suffix(".bin") {
            assert!(entry["tokens"].as_u64().unwrap() <= 3000);
            all.extend(read_megatron(&t.join(&format!("m/{prefix}"))));
        }
    }
    let enc = gpt2();
    let want: Vec<Vec<u32>> = docs
        .iter()
        .map(|d| enc.encode_ordinary(d).into_iter().chain([50256]).collect())
        .collect();
    assert_eq!(all, want);
    assert_eq!(m["totals"]["documents"], 40);
}

#[test]
fn malformed_records_are_counted_with_file_and_line_or_fatal_with_strict() {
    let t = Tree::new();
    t.file(
        "c.jsonl",
        "{\"text\": \"good\"}\n{\"text\": \"trunc\n{\"id\": 3}\n\n{\"text\": null}\n{\"text\": \"also good\"}\n",
    );
    let (code, report) = run_json(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("o"),
        "-t",
        "gpt2",
        "--format",
        "nanogpt",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["documents"], 2);
    assert_eq!(report["skipped_total"], 4);
    let reasons: Vec<String> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{}: {}",
                s["path"].as_str().unwrap(),
                s["reason"].as_str().unwrap()
            )
        })
        .collect();
    for (line, why) in [
        (2, "not a JSON object"),
        (3, "no field `text`"),
        (4, "empty line"),
        (5, "is null"),
    ] {
        assert!(
            reasons
                .iter()
                .any(|r| r.contains(&format!("c.jsonl: line {line}: ")) && r.contains(why)),
            "line {line}: {reasons:?}"
        );
    }
    assert_eq!(manifest(&t.join("o"))["skipped_total"], 4);
    let o = run(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("s"),
        "-t",
        "gpt2",
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("c.jsonl` line 2") && err.contains("--strict"),
        "{err}"
    );
    assert!(!t.join("s/manifest.json").exists());
    let o = run(&[
        "tokenize",
        &t.s("c.jsonl"),
        &t.s("f"),
        "-t",
        "gpt2",
        "--field",
        "body",
    ]);
    assert_eq!(o.status.code(), Some(2), "no document at all is an error");
    assert!(
        text(&o.stderr).contains("no field `body`"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["tokenize", &t.s("c.jsonl"), &t.s("x"), "-t", "gpt3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("tokenizer `gpt3`"),
        "{}",
        text(&o.stderr)
    );
}
