//! The corpus and the runs the pipeline's tests share.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::batch::Position;
use crate::input::{Reader, TextInput};
use crate::run::tokenize_cut;
use crate::settings::{NoProgress, TokenizeSettings};
use crate::tokenizer::{OpenAi, Tokenizer, TokenizerSpec};
use crate::write::TokenFormat;
use shardsmith_store::LocalDir;

/// Every record of `files` from `from` on, as the sequential reader reads them: its
/// position and bytes.
pub(super) fn sequential(files: &[TextInput], from: Position) -> Vec<(Position, Vec<u8>)> {
    let mut reader = Reader::new(files, "text", from);
    let mut out = Vec::new();
    while let Some(batch) = reader.next_batch().unwrap() {
        for r in batch.records {
            out.push((r.pos, batch.data[r.range].to_vec()));
        }
    }
    out
}

/// A corpus with what a cut can fall in: long lines, empty lines, CRLF, multi-byte
/// characters, escapes, malformed records, a file without a trailing newline, empty
/// files, and compressed and text files among the plain ones.
pub(super) fn corpus(dir: &Path) {
    let mut a = String::new();
    for i in 0..400u32 {
        let len = (i as usize * 7919) % 700;
        let body: String = (0..len)
            .map(|k| ["x", " ", "é", "日", "\\n", "\\\"", "ab", "\t"][(k + i as usize) % 8])
            .collect();
        match i % 37 {
            5 => a.push_str("not json\n"),
            9 => a.push('\n'),
            13 => a.push_str("{\"id\": 1}\n"),
            17 => a.push_str("{\"text\": null}\r\n"),
            21 => a.push_str(&format!("{{\"text\": \"{body}\"}}\r\n")),
            _ => a.push_str(&format!("{{\"id\": {i}, \"text\": \"{body}\"}}\n")),
        }
    }
    a.push_str(&format!("{{\"text\": \"{}\"}}\n", "long ".repeat(3000)));
    a.push_str("{\"text\": \"the end, no newline\"}");
    std::fs::write(dir.join("a.jsonl"), &a).unwrap();
    let lines: String = (0..50)
        .map(|i| format!("{{\"text\": \"gz {i} {}\"}}\n", "z".repeat(i * 13)))
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(lines.as_bytes()).unwrap();
    std::fs::write(dir.join("b.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(dir.join("c.txt"), "a whole text file\nof two lines").unwrap();
    std::fs::write(dir.join("d.jsonl"), "{\"text\": \"small\"}\n\n").unwrap();
    std::fs::write(dir.join("e.jsonl"), "").unwrap();
    std::fs::write(
        dir.join("f.jsonl.zst"),
        zstd::encode_all(lines.as_bytes(), 1).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("g.jsonl"), &a[..a.len() / 3]).unwrap();
    std::fs::write(dir.join("h.md"), "").unwrap();
}

pub(super) fn gpt2() -> &'static Tokenizer {
    static GPT2: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    GPT2.get_or_init(|| Tokenizer::load(&TokenizerSpec::OpenAi(OpenAi::R50k), false).unwrap())
}

pub(super) fn settings(format: TokenFormat, shard_tokens: u64, threads: usize) -> TokenizeSettings {
    TokenizeSettings {
        format,
        field: "text".into(),
        shard_tokens: Some(shard_tokens),
        prefix: "tokens".into(),
        eod: true,
        eod_token: None,
        allow_special: false,
        strict: false,
        force: false,
        threads,
        dedup: false,
    }
}

/// Every file below `dir`, by relative path.
pub(super) fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out.insert(name, std::fs::read(&path).unwrap());
        }
    }
    out
}

/// Runs `tokenize` of `files` into `out`, plain files cut every `cut` bytes.
pub(super) fn run(
    files: &[TextInput],
    out: &Path,
    settings: &TokenizeSettings,
    cut: u64,
) -> crate::Result<crate::TokenizeReport> {
    let sink = LocalDir::create(out).unwrap();
    tokenize_cut(files, &sink, gpt2(), settings, &NoProgress, cut)
}

pub(super) const FORMATS: [(TokenFormat, u64); 3] = [
    (TokenFormat::Nanogpt, 1000),
    (TokenFormat::Megatron, 1500),
    (TokenFormat::Llmc, 1200),
];
