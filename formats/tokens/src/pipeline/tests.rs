//! The pipeline cut anywhere and run on any number of workers gives the bytes of one
//! sequential read: every record once, in order, numbered alike; a run stopped midway
//! resumes to the same bytes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::plan::{CUT_BYTES, Job, Planner};
use super::read::read_pieces;
use crate::batch::{Batch, Position, RecordKind};
use crate::input::{InputRoot, Reader, TextInput, list};
use crate::run::tokenize_cut;
use crate::settings::{NoProgress, TokenizeSettings};
use crate::tokenizer::{OpenAi, Scratch, Tokenizer, TokenizerSpec};
use crate::write::TokenFormat;
use shardsmith_store::{LocalDir, OutputSink, ShardFile};

/// Every record of `files` from `from` on, as the sequential reader reads them: its
/// position and bytes.
fn sequential(files: &[TextInput], from: Position) -> Vec<(Position, Vec<u8>)> {
    let mut reader = Reader::new(files, "text", from);
    let mut out = Vec::new();
    while let Some(batch) = reader.next_batch().unwrap() {
        for r in batch.records {
            out.push((r.pos, batch.data[r.range].to_vec()));
        }
    }
    out
}

/// Every record of the units of pieces of `files` from `from` on, cut every `cut`
/// bytes, with its file, offset and bytes (lines are numbered by the writer).
fn cut_up(files: &[TextInput], from: Position, cut: u64) -> Vec<(usize, u64, Vec<u8>)> {
    let mut planner = Planner::new(files, "text", from, cut);
    let mut out = Vec::new();
    let mut batch = Batch::default();
    while let Some(unit) = planner.next_unit() {
        match unit.job {
            Job::Pieces(pieces) => {
                read_pieces(files, &pieces, &mut batch).unwrap();
                for r in &batch.records {
                    assert_eq!(r.kind, RecordKind::Json);
                    let bytes = batch.data[r.range.clone()].to_vec();
                    out.push((r.pos.file, r.pos.offset, bytes));
                }
            }
            Job::End(_) => {}
            _ => panic!("only plain JSONL here"),
        }
    }
    out
}

const TRICKY: [&str; 8] = [
    "",
    "\n",
    "\n\n\n",
    "{\"text\":\"one line, no newline\"}",
    "a\nbb\n\nccc\r\nd\r\n\r\neeeeeeeeeeeeeeee\nf",
    "{\"text\":\"é\"}\n\n{\"text\":\"日本\"}\r\n{\"te\nxt\":1}\nlast\n",
    "long-long-long-long-long-long-long-long-long-long-long\nx\n",
    "\r\n\r\n",
];

#[test]
fn the_lines_of_a_file_cut_anywhere_are_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in TRICKY.iter().enumerate() {
        let path = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&path, text).unwrap();
        let files = list(&[InputRoot::local(&path).unwrap()]).unwrap();
        let whole: Vec<_> = sequential(&files, Position::default())
            .into_iter()
            .map(|(p, b)| (p.file, p.offset, b))
            .collect();
        for cut in 1..=text.len() as u64 + 2 {
            assert_eq!(
                cut_up(&files, Position::default(), cut),
                whole,
                "{text:?} cut {cut}"
            );
            // Resumed at any record, whatever the cut.
            for (k, (_, offset, _)) in whole.iter().enumerate() {
                let from = Position {
                    file: 0,
                    offset: *offset,
                    line: k as u64 + 1,
                };
                assert_eq!(
                    cut_up(&files, from, cut),
                    whole[k..],
                    "{text:?} cut {cut} from {offset}"
                );
            }
        }
        // Spans (a split run's shares) cut anywhere hold the lines that start in them,
        // as the sequential reader reads them.
        for a in 0..=text.len() as u64 {
            for b in a..=text.len() as u64 {
                let span = vec![TextInput {
                    span: Some(a..b),
                    ..files[0].clone()
                }];
                let want: Vec<_> = sequential(&span, Position::default())
                    .into_iter()
                    .map(|(p, b)| (p.file, p.offset, b))
                    .collect();
                for cut in [1, 2, 3, 100] {
                    assert_eq!(
                        cut_up(&span, Position::default(), cut),
                        want,
                        "{text:?} span {a}..{b} cut {cut}"
                    );
                }
            }
        }
    }
}

/// A corpus with what a cut can fall in: long lines, empty lines, CRLF, multi-byte
/// characters, escapes, malformed records, a file without a trailing newline, empty
/// files, and compressed and text files among the plain ones.
fn corpus(dir: &Path) {
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

fn gpt2() -> &'static Tokenizer {
    static GPT2: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    GPT2.get_or_init(|| Tokenizer::load(&TokenizerSpec::OpenAi(OpenAi::R50k), false).unwrap())
}

fn settings(format: TokenFormat, shard_tokens: u64, threads: usize) -> TokenizeSettings {
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
    }
}

/// Every file below `dir`, by relative path.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
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
fn run(
    files: &[TextInput],
    out: &Path,
    settings: &TokenizeSettings,
    cut: u64,
) -> crate::Result<crate::TokenizeReport> {
    let sink = LocalDir::create(out).unwrap();
    tokenize_cut(files, &sink, gpt2(), settings, &NoProgress, cut)
}

const FORMATS: [(TokenFormat, u64); 3] = [
    (TokenFormat::Nanogpt, 1000),
    (TokenFormat::Megatron, 1500),
    (TokenFormat::Llmc, 1200),
];

#[test]
fn the_output_is_the_same_whatever_the_jobs_and_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    corpus(&input);
    let files = list(&[InputRoot::local(&input).unwrap()]).unwrap();
    assert_eq!(files.len(), 8);
    // The ids of every document, read in order by one thread, tokenized one by one.
    let mut want = Vec::new();
    let mut scratch = Scratch::default();
    for (pos, bytes) in sequential(&files, Position::default()) {
        let text = match files[pos.file].kind {
            crate::InputKind::Text => String::from_utf8(bytes).unwrap().into(),
            _ => match crate::json_text(&bytes, "text") {
                Ok(text) => text,
                Err(_) => continue,
            },
        };
        gpt2().encode(&text, &mut scratch, &mut want).unwrap();
        want.push(50256);
    }
    for (format, shard_tokens) in FORMATS {
        let reference = dir.path().join(format!("{format:?}"));
        let report = run(
            &files,
            &reference,
            &settings(format, shard_tokens, 1),
            CUT_BYTES,
        )
        .unwrap();
        let want_snapshot = snapshot(&reference);
        if format == TokenFormat::Nanogpt {
            let ids: Vec<u32> = want_snapshot
                .iter()
                .filter(|(name, _)| name.ends_with(".bin"))
                .flat_map(|(_, bytes)| bytes.chunks_exact(2))
                .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                .collect();
            assert_eq!(ids, want, "the documents, in order");
            let skipped: Vec<String> = report
                .manifest
                .skipped
                .iter()
                .map(|s| {
                    format!(
                        "{} {}",
                        Path::new(&s.path).file_name().unwrap().to_string_lossy(),
                        s.reason
                    )
                })
                .collect();
            assert_eq!(report.manifest.skipped_total, Some(skipped.len() as u64));
            for (line, why) in [
                (6, "not a JSON object"),
                (10, "empty line"),
                (14, "no field"),
                (18, "is null"),
            ] {
                assert!(
                    skipped.iter().any(
                        |s| s.starts_with(&format!("a.jsonl line {line}: ")) && s.contains(why)
                    ),
                    "{line} {why}: {skipped:?}"
                );
            }
            assert!(
                skipped
                    .iter()
                    .any(|s| s.starts_with("d.jsonl line 2: empty line")),
                "{skipped:?}"
            );
        }
        for jobs in [1, 2, 3, 7] {
            for cut in [3, 64, 1000, CUT_BYTES] {
                let out = dir.path().join(format!("{format:?}-{jobs}-{cut}"));
                run(&files, &out, &settings(format, shard_tokens, jobs), cut).unwrap();
                assert!(
                    snapshot(&out) == want_snapshot,
                    "{format:?} -j {jobs}, cut every {cut} bytes"
                );
                std::fs::remove_dir_all(&out).unwrap();
            }
        }
    }
}

/// A local output whose `fail_at`-th token file cannot be created: a run that stops
/// midway, with the shards before it committed.
struct FailingSink {
    inner: LocalDir,
    created: AtomicUsize,
    fail_at: usize,
}

impl OutputSink for FailingSink {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn create(&self, name: &str) -> shardsmith_store::Result<Box<dyn ShardFile>> {
        if name.ends_with(".bin") && self.created.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            return Err(shardsmith_store::Error::io(
                "creating",
                name,
                std::io::Error::other("stopped here by the test"),
            ));
        }
        self.inner.create(name)
    }
    fn size(&self, name: &str) -> shardsmith_store::Result<Option<u64>> {
        self.inner.size(name)
    }
    fn read(&self, name: &str) -> shardsmith_store::Result<Option<Vec<u8>>> {
        self.inner.read(name)
    }
    fn remove(&self, name: &str) -> shardsmith_store::Result<()> {
        self.inner.remove(name)
    }
    fn list(&self) -> shardsmith_store::Result<Vec<String>> {
        self.inner.list()
    }
    fn lock_named(&self, tag: &str) -> shardsmith_store::Result<Box<dyn Send>> {
        self.inner.lock_named(tag)
    }
    fn rename(&self, from: &str, to: &str) -> shardsmith_store::Result<()> {
        self.inner.rename(from, to)
    }
    fn child(&self, sub: &str) -> shardsmith_store::Result<Box<dyn OutputSink>> {
        self.inner.child(sub)
    }
}

#[test]
fn a_run_stopped_midway_resumes_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    corpus(&input);
    let files = list(&[InputRoot::local(&input).unwrap()]).unwrap();
    for (format, shard_tokens) in FORMATS {
        let reference = dir.path().join(format!("{format:?}"));
        run(
            &files,
            &reference,
            &settings(format, shard_tokens, 1),
            CUT_BYTES,
        )
        .unwrap();
        let want = snapshot(&reference);
        let shards = want.keys().filter(|k| k.ends_with(".bin")).count();
        assert!(shards > 10, "{format:?}: {shards} shards");
        for (jobs, cut, fail_at) in [
            (1, CUT_BYTES, 3),
            (2, 64, 1),
            (3, 1000, shards / 2),
            (7, 5, shards - 1),
        ] {
            let out = dir.path().join(format!("{format:?}-{jobs}-{cut}"));
            let failing = FailingSink {
                inner: LocalDir::create(&out).unwrap(),
                created: AtomicUsize::new(0),
                fail_at,
            };
            let settings = settings(format, shard_tokens, jobs);
            let err = tokenize_cut(&files, &failing, gpt2(), &settings, &NoProgress, cut)
                .expect_err("stopped");
            assert!(
                err.to_string().contains("stopped here by the test"),
                "{err}"
            );
            let kept = std::fs::read_dir(&out)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .ends_with(".bin")
                })
                .count();
            assert_eq!(
                kept, fail_at,
                "{format:?}: the shards before the failure are kept"
            );
            let report = run(&files, &out, &settings, cut).unwrap();
            assert_eq!(report.shards_resumed, fail_at);
            assert!(
                snapshot(&out) == want,
                "{format:?} -j {jobs} cut {cut}: resumed after {fail_at} shards"
            );
        }
    }
}

/// Where the readers of a [`MeetingSource`] are.
#[derive(Default)]
struct Meeting {
    /// The threads reading now.
    inside: std::collections::HashSet<std::thread::ThreadId>,
    /// Two threads were reading at once.
    met: bool,
    /// A reader waited in vain: no more waiting.
    gave_up: bool,
}

/// Makes every read wait (a while, until the first meeting) for a second reader.
#[derive(Default)]
struct Rendezvous {
    state: std::sync::Mutex<Meeting>,
    changed: std::sync::Condvar,
}

impl Rendezvous {
    fn meet(&self) {
        let me = std::thread::current().id();
        let mut st = self.state.lock().unwrap();
        st.inside.insert(me);
        st.met |= st.inside.len() >= 2;
        self.changed.notify_all();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !st.met && !st.gave_up {
            let now = std::time::Instant::now();
            if now >= deadline {
                st.gave_up = true;
                break;
            }
            st = self.changed.wait_timeout(st, deadline - now).unwrap().0;
        }
        st.inside.remove(&me);
    }
}

/// A local tree whose reads meet at a [`Rendezvous`].
struct MeetingSource {
    inner: shardsmith_store::LocalTree,
    rendezvous: std::sync::Arc<Rendezvous>,
}

struct MeetingFile {
    inner: std::sync::Arc<dyn shardsmith_store::RangeRead>,
    rendezvous: std::sync::Arc<Rendezvous>,
}

impl shardsmith_store::RangeRead for MeetingFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.rendezvous.meet();
        self.inner.read_at(offset, buf)
    }
}

struct MeetingReader {
    inner: Box<dyn std::io::Read + Send>,
    rendezvous: std::sync::Arc<Rendezvous>,
}

impl std::io::Read for MeetingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.rendezvous.meet();
        self.inner.read(buf)
    }
}

impl shardsmith_store::InputSource for MeetingSource {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn list(&self) -> shardsmith_store::Result<shardsmith_store::InputListing> {
        self.inner.list()
    }
    fn read_into(
        &self,
        rel: &str,
        size: u64,
        buf: &mut Vec<u8>,
    ) -> Result<(), shardsmith_store::ReadError> {
        self.rendezvous.meet();
        self.inner.read_into(rel, size, buf)
    }
    fn open(
        &self,
        rel: &str,
    ) -> Result<Box<dyn std::io::Read + Send>, shardsmith_store::ReadError> {
        self.open_at(rel, 0)
    }
    fn open_at(
        &self,
        rel: &str,
        offset: u64,
    ) -> Result<Box<dyn std::io::Read + Send>, shardsmith_store::ReadError> {
        Ok(Box::new(MeetingReader {
            inner: self.inner.open_at(rel, offset)?,
            rendezvous: self.rendezvous.clone(),
        }))
    }
    fn open_ranged(
        &self,
        rel: &str,
    ) -> Result<std::sync::Arc<dyn shardsmith_store::RangeRead>, shardsmith_store::ReadError> {
        Ok(std::sync::Arc::new(MeetingFile {
            inner: self.inner.open_ranged(rel)?,
            rendezvous: self.rendezvous.clone(),
        }))
    }
}

/// No thread reads the whole input: with several workers, two read a plain JSONL file
/// at the same time (each read waits for a second reader, a while, the first time).
#[test]
fn several_workers_read_one_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{{\"text\": \"{}\"}}\n", "word ".repeat(200));
    std::fs::write(
        dir.path().join("c.jsonl"),
        line.repeat(4 * (1 << 20) / line.len()),
    )
    .unwrap();
    let rendezvous = std::sync::Arc::new(Rendezvous::default());
    let root = InputRoot {
        source: std::sync::Arc::new(MeetingSource {
            inner: shardsmith_store::LocalTree::new(dir.path()),
            rendezvous: rendezvous.clone(),
        }),
        display: dir.path().display().to_string(),
        file: None,
    };
    let files = list(&[root]).unwrap();
    let sink = LocalDir::create(dir.path().join("out")).unwrap();
    let settings = settings(TokenFormat::Nanogpt, 1 << 20, 4);
    crate::tokenize(&files, &sink, gpt2(), &settings, &NoProgress).unwrap();
    assert!(
        rendezvous.state.lock().unwrap().met,
        "two threads read the input at the same time"
    );
}
