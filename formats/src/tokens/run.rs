//! The `tokenize` pipeline: reader → workers → ordered writer → committer, resume and
//! the manifest. See the module documentation of [`super`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shardsmith_manifest::{
    DEFAULT_CHUNK_SIZE, FileEntry, InputSummary, MANIFEST_FILE, Manifest, ManifestKind, SUMS_FILE,
    Skipped, canonical_json, sha256_hex, sums,
};

use super::input::{InputFile, Position, Reader};
use super::tokenizer::{Scratch, Tokenizer};
use super::work::{Tokenized, tokenize_batch};
use super::write::{Dtype, ShardWriter, TokenFormat};
use crate::resume::{self, Job, Start};
use crate::sink::{OutputSink, ShardFile};
use crate::{Error, Result};

/// Malformed records listed by name in the manifest (all are counted).
const SKIPPED_LISTED: usize = 1000;

/// Settings of a `tokenize` run, checked by [`TokenizeSettings::check`].
#[derive(Clone, Debug)]
pub struct TokenizeSettings {
    /// Output format.
    pub format: TokenFormat,
    /// JSON key or Parquet column holding the text.
    pub field: String,
    /// Tokens per shard (`None`: one file). nanoGPT and llm.c shards hold exactly this
    /// many (the last one fewer); Megatron shards end before the document that would
    /// overflow them.
    pub shard_tokens: Option<u64>,
    /// File name prefix: `PREFIX_000000.bin`.
    pub prefix: String,
    /// Add the end-of-document token to every document.
    pub eod: bool,
    /// The end-of-document token (default: the tokenizer's `<|endoftext|>` or the like).
    pub eod_token: Option<String>,
    /// Special-token text in documents is the special token (else ordinary text).
    pub allow_special: bool,
    /// A malformed record is an error instead of being counted and left out.
    pub strict: bool,
    /// Replace an output that holds a different dataset.
    pub force: bool,
    /// Worker threads.
    pub threads: usize,
}

impl TokenizeSettings {
    /// Checks the settings before any I/O.
    pub fn check(&self) -> Result<()> {
        if self.shard_tokens == Some(0) {
            return Err(Error::Setting("--shard-tokens must be at least 1".into()));
        }
        if self.format == TokenFormat::Llmc && self.shard_tokens.is_none_or(|n| n > i32::MAX as u64)
        {
            return Err(Error::Setting(format!(
                "llm.c files count their tokens in a 32-bit header field: --shard-tokens must be at most {}",
                i32::MAX
            )));
        }
        if !crate::naming::valid_prefix(&self.prefix) {
            return Err(Error::Setting(format!(
                "prefix `{}` must be ASCII letters, digits, `-`, `_` or `.` and not start with a dot",
                self.prefix
            )));
        }
        if self.field.is_empty() {
            return Err(Error::Setting("--field must not be empty".into()));
        }
        Ok(())
    }
}

/// Progress callbacks; called from the writer thread.
pub trait TokenizeObserver: Sync {
    /// Input bytes to read in all (as stored).
    fn planned(&self, _input_bytes: u64) {}
    /// Documents written, input bytes consumed and tokens written since the last call.
    fn advanced(&self, _documents: u64, _input_bytes: u64, _tokens: u64) {}
}

/// Observes nothing.
pub struct NoProgress;
impl TokenizeObserver for NoProgress {}

/// What a `tokenize` run did.
#[derive(Clone, Debug)]
pub struct TokenizeReport {
    /// The manifest written (or found complete).
    pub manifest: Manifest,
    /// Shards written by this run.
    pub shards_written: usize,
    /// Shards kept from an interrupted run.
    pub shards_resumed: usize,
    /// The output already held this exact dataset; nothing was written.
    pub already_complete: bool,
    /// Input bytes read by this run.
    pub input_bytes_read: u64,
}

/// Running totals, saved with every shard so a resumed run continues them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Stats {
    documents: u64,
    tokens: u64,
    skipped_total: u64,
    skipped: Vec<Skipped>,
}

/// The resume record of a finished shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ShardRecord {
    entries: Vec<FileEntry>,
    /// Where the next shard's first document starts.
    next: Position,
    /// Tokens of that document this shard (and those before) already hold.
    carry: u64,
    stats: Stats,
}

/// Tokenizes `inputs` into `sink`.
pub fn tokenize(
    inputs: &[InputFile],
    sink: &dyn OutputSink,
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
    observer: &dyn TokenizeObserver,
) -> Result<TokenizeReport> {
    settings.check()?;
    if inputs.is_empty() {
        return Err(Error::NoDocuments {
            root: "the input".into(),
            detail: ": no .jsonl, .json, .ndjson (optionally .gz or .zst), .parquet, .txt or .md files found".into(),
        });
    }
    let vocab = tokenizer.vocab_size();
    let dtype = settings.format.dtype(vocab)?;
    let eod = if settings.eod {
        Some(tokenizer.eod(settings.eod_token.as_deref())?)
    } else {
        None
    };

    let mut manifest = Manifest::new(ManifestKind::Tokenize, DEFAULT_CHUNK_SIZE, Vec::new());
    manifest.format = Some(settings.format.name().into());
    manifest.options = options(settings, tokenizer, dtype, eod.as_ref());
    manifest.input = Some(input_summary(inputs));
    let fingerprint = fingerprint(&manifest);

    let _lock = sink.lock()?;
    let prefix = settings.prefix.clone();
    let is_own = |name: &str| is_own_file(name, &prefix);
    let job = Job {
        command: "tokenize",
        verb: "tokenized",
        kind: ManifestKind::Tokenize,
        is_own: &is_own,
    };
    let resuming = match resume::prepare(sink, &job, &manifest, &fingerprint, settings.force)? {
        Start::Complete(existing) => {
            return Ok(TokenizeReport {
                manifest: *existing,
                shards_written: 0,
                shards_resumed: 0,
                already_complete: true,
                input_bytes_read: 0,
            });
        }
        Start::Resume => true,
        Start::Fresh => false,
    };
    let records = if resuming {
        resumable(sink, &fingerprint, &settings.prefix)?
    } else {
        Vec::new()
    };
    let shards_resumed = records.len();
    let (start, carry, stats) = records.last().map_or_else(
        || (Position::default(), 0, Stats::default()),
        |r| (r.next, r.carry, r.stats.clone()),
    );
    observer.planned(inputs.iter().map(|f| f.size).sum());

    let out = Output {
        sink,
        format: settings.format,
        dtype,
        vocab,
        prefix: &settings.prefix,
        limit: settings.shard_tokens,
        eod: eod.map(|(_, id)| id),
        strict: settings.strict,
        inputs,
        current: None,
        index: records.len(),
        carry,
        stats,
        ids: Vec::new(),
        records,
        input_bytes: 0,
    };
    let out = pipeline(
        inputs,
        tokenizer,
        settings,
        start,
        out,
        &fingerprint,
        observer,
    )?;
    let input_bytes_read = out.input_bytes;

    if out.stats.documents == 0 {
        return Err(Error::NoDocuments {
            root: inputs[0].display.clone(),
            detail: match out.stats.skipped.first() {
                Some(first) => format!(
                    ": all {} record(s) were left out; first: `{}` {}",
                    out.stats.skipped_total, first.path, first.reason
                ),
                None => ": it holds no documents".into(),
            },
        });
    }
    manifest.files = out.records.iter().flat_map(|r| r.entries.clone()).collect();
    manifest.skipped = out.stats.skipped.clone();
    manifest.skipped_total = (out.stats.skipped_total > 0).then_some(out.stats.skipped_total);
    manifest.recount();
    manifest.seal();
    sink.write_atomic(SUMS_FILE, sums::render(&manifest.files).as_bytes())?;
    sink.write_atomic(MANIFEST_FILE, &manifest.to_json_bytes())?;
    resume::clear(sink)?;
    Ok(TokenizeReport {
        shards_written: out.records.len() - shards_resumed,
        shards_resumed,
        manifest,
        already_complete: false,
        input_bytes_read,
    })
}

/// What travels from the workers (and, last, the reader) to the writer.
enum Msg {
    Batch(Tokenized),
    /// The input is read to the end, which is here.
    End(Position),
}

/// A finished shard on its way to durability.
struct Commit {
    name: String,
    record: ShardRecord,
    files: Vec<Box<dyn ShardFile>>,
}

/// Runs reader (this thread), workers, writer and committer until the input is read
/// and every shard is committed.
fn pipeline<'a>(
    inputs: &[InputFile],
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
    start: Position,
    out: Output<'a>,
    fingerprint: &str,
    observer: &dyn TokenizeObserver,
) -> Result<Output<'a>> {
    let threads = settings.threads.max(1);
    let in_flight = 2 * threads + 2;
    let failed = AtomicBool::new(false);
    let (batch_tx, batch_rx) = mpsc::sync_channel::<(u64, super::input::Batch)>(threads);
    let batch_rx = Mutex::new(batch_rx);
    let (done_tx, done_rx) = mpsc::channel::<(u64, Msg)>();
    let (ticket_tx, ticket_rx) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        ticket_tx.send(()).expect("the ticket channel has room");
    }
    let (commit_tx, commit_rx) = mpsc::channel::<Commit>();
    let sink = out.sink;
    std::thread::scope(|scope| {
        let failed = &failed;
        let committer = scope.spawn(move || {
            for commit in commit_rx {
                let done = resume::save_done(sink, fingerprint, "", &commit.name, &commit.record)
                    .and_then(|()| commit.files.into_iter().try_for_each(|f| f.commit()));
                if done.is_err() {
                    failed.store(true, Ordering::Relaxed);
                    return done;
                }
            }
            Ok(())
        });
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let batch_rx = &batch_rx;
            let field = settings.field.as_str();
            scope.spawn(move || {
                let mut scratch = Scratch::default();
                // When the writer has stopped (an error), keep taking batches without
                // work until the reader runs out of tickets and closes the channel, so
                // it is never left blocked on a full channel nobody empties.
                let mut writer_gone = false;
                loop {
                    let job = batch_rx
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .recv();
                    let Ok((seq, batch)) = job else { return };
                    if writer_gone {
                        continue;
                    }
                    let result = tokenize_batch(batch, tokenizer, field, &mut scratch);
                    writer_gone = done_tx.send((seq, Msg::Batch(result))).is_err();
                }
            });
        }
        let writer = scope
            .spawn(move || write_in_order(out, done_rx, ticket_tx, commit_tx, failed, observer));
        let read = read_all(inputs, &settings.field, start, batch_tx, ticket_rx, done_tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::Setting("the writer thread panicked".into())));
        let committed = committer
            .join()
            .unwrap_or_else(|_| Err(Error::Setting("the commit thread panicked".into())));
        // A reader error stops the writer short; a commit error stops the writer.
        read?;
        committed?;
        written
    })
}

/// Reads the input into batches for the workers, at most `in_flight` batches ahead of
/// the writer; sends the end position to the writer when done.
fn read_all(
    inputs: &[InputFile],
    field: &str,
    start: Position,
    batches: SyncSender<(u64, super::input::Batch)>,
    tickets: Receiver<()>,
    done: Sender<(u64, Msg)>,
) -> Result<()> {
    let mut reader = Reader::new(inputs, field, start);
    let mut seq = 0u64;
    loop {
        if tickets.recv().is_err() {
            // The writer stopped; it says why.
            return Ok(());
        }
        match reader.next_batch()? {
            Some(batch) => {
                if batches.send((seq, batch)).is_err() {
                    return Ok(());
                }
            }
            None => {
                let _ = done.send((seq, Msg::End(reader.position())));
                return Ok(());
            }
        }
        seq += 1;
    }
}

/// Writes the workers' results in input order.
fn write_in_order<'a>(
    mut out: Output<'a>,
    done: Receiver<(u64, Msg)>,
    tickets: SyncSender<()>,
    commits: Sender<Commit>,
    failed: &AtomicBool,
    observer: &dyn TokenizeObserver,
) -> Result<Output<'a>> {
    let mut waiting = BTreeMap::new();
    let mut next = 0u64;
    for (seq, msg) in done {
        waiting.insert(seq, msg);
        while let Some(msg) = waiting.remove(&next) {
            if failed.load(Ordering::Relaxed) {
                return Err(Error::Setting(
                    "stopped: a finished shard could not be committed".into(),
                ));
            }
            match msg {
                Msg::Batch(batch) => {
                    let before = (out.stats.documents, out.stats.tokens);
                    out.batch(&batch, &commits)?;
                    out.input_bytes += batch.input_bytes;
                    observer.advanced(
                        out.stats.documents - before.0,
                        batch.input_bytes,
                        out.stats.tokens - before.1,
                    );
                    let _ = tickets.send(());
                }
                Msg::End(end) => {
                    out.close(end, 0, &commits)?;
                    return Ok(out);
                }
            }
            next += 1;
        }
    }
    Err(Error::Setting("the input stopped before its end".into()))
}

/// The writer's state: the shard being written and everything written so far.
struct Output<'a> {
    sink: &'a dyn OutputSink,
    format: TokenFormat,
    dtype: Dtype,
    vocab: u32,
    prefix: &'a str,
    limit: Option<u64>,
    eod: Option<u32>,
    strict: bool,
    inputs: &'a [InputFile],
    current: Option<ShardWriter>,
    /// Index of the shard being (or next to be) written.
    index: usize,
    /// Tokens of the first document already written by an interrupted run.
    carry: u64,
    stats: Stats,
    ids: Vec<u32>,
    records: Vec<ShardRecord>,
    input_bytes: u64,
}

impl Output<'_> {
    fn batch(&mut self, batch: &Tokenized, commits: &Sender<Commit>) -> Result<()> {
        let mut at = 0;
        for doc in &batch.docs {
            let tokens = &batch.tokens[at..at + doc.len];
            at += doc.len;
            match &doc.problem {
                Some(reason) => self.problem(doc.pos, reason)?,
                None => self.document(doc.pos, tokens, commits)?,
            }
        }
        Ok(())
    }

    fn problem(&mut self, pos: Position, reason: &str) -> Result<()> {
        let path = self.inputs[pos.file].display.clone();
        if self.strict {
            return Err(Error::BadRecord {
                path,
                line: pos.line,
                reason: format!("{reason} (--strict makes every malformed record an error)"),
            });
        }
        self.stats.skipped_total += 1;
        if self.stats.skipped.len() < SKIPPED_LISTED {
            self.stats.skipped.push(Skipped {
                path,
                reason: format!("line {}: {reason}", pos.line),
            });
        }
        Ok(())
    }

    fn open(&mut self) -> Result<&mut ShardWriter> {
        if self.current.is_none() {
            let name = TokenFormat::bin_name(self.prefix, self.index);
            self.current = Some(ShardWriter::create(
                self.sink,
                self.format,
                self.dtype,
                self.vocab,
                name,
                self.limit.unwrap_or(0),
            )?);
        }
        Ok(self.current.as_mut().expect("opened above"))
    }

    fn full(&self) -> bool {
        match (&self.current, self.limit) {
            (Some(cur), Some(limit)) => cur.tokens() >= limit,
            _ => false,
        }
    }

    fn document(&mut self, pos: Position, tokens: &[u32], commits: &Sender<Commit>) -> Result<()> {
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        match (self.format, self.eod) {
            (TokenFormat::Llmc, Some(eod)) => {
                ids.push(eod);
                ids.extend_from_slice(tokens);
            }
            (TokenFormat::Megatron, Some(eod)) if !tokens.is_empty() => {
                ids.extend_from_slice(tokens);
                ids.push(eod);
            }
            (TokenFormat::Nanogpt, Some(eod)) => {
                ids.extend_from_slice(tokens);
                ids.push(eod);
            }
            _ => ids.extend_from_slice(tokens),
        }
        let n = ids.len() as u64;
        if self.format == TokenFormat::Megatron {
            let overflows = match (&self.current, self.limit) {
                (Some(cur), Some(limit)) => cur.tokens() > 0 && cur.tokens() + n > limit,
                _ => false,
            };
            if overflows {
                self.close(pos, 0, commits)?;
            }
            let cur = self.open()?;
            cur.write(&ids)?;
            cur.document(n)?;
        } else {
            let format = self.format;
            let mut written = std::mem::take(&mut self.carry).min(n);
            if n == 0 {
                self.open()?.document(0)?;
            }
            while written < n {
                if self.full() {
                    self.close(pos, written, commits)?;
                }
                let limit = self.limit;
                let cur = self.open()?;
                if format == TokenFormat::Llmc && written == 0 {
                    cur.document(0)?;
                }
                let room = limit.map_or(n - written, |l| l - cur.tokens());
                let take = room.min(n - written) as usize;
                let w = written as usize;
                cur.write(&ids[w..w + take])?;
                written += take as u64;
                if format == TokenFormat::Nanogpt && written == n {
                    cur.document(0)?;
                }
            }
        }
        self.stats.documents += 1;
        self.stats.tokens += n;
        self.ids = ids;
        Ok(())
    }

    /// Finishes the current shard (if any) and hands it to the committer; the next shard
    /// starts at `next`, `carry` tokens into that document.
    fn close(&mut self, next: Position, carry: u64, commits: &Sender<Commit>) -> Result<()> {
        let Some(cur) = self.current.take() else {
            return Ok(());
        };
        let name = cur.name().to_string();
        let (entries, files) = cur.finish(self.sink)?;
        let record = ShardRecord {
            entries,
            next,
            carry,
            stats: self.stats.clone(),
        };
        self.records.push(record.clone());
        self.index += 1;
        commits
            .send(Commit {
                name,
                record,
                files,
            })
            .map_err(|_| Error::Setting("stopped: the commit thread ended early".into()))
    }
}

/// True for `PREFIX_NNNNNN.bin` and `PREFIX_NNNNNN.idx`.
fn is_own_file(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    let Some(digits) = rest
        .strip_suffix(".bin")
        .or_else(|| rest.strip_suffix(".idx"))
    else {
        return false;
    };
    digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The records of the shards an interrupted run finished, in order, up to the first
/// one missing or changed; every later file of ours is removed.
fn resumable(sink: &dyn OutputSink, fingerprint: &str, prefix: &str) -> Result<Vec<ShardRecord>> {
    let mut records: Vec<ShardRecord> = Vec::new();
    loop {
        let name = TokenFormat::bin_name(prefix, records.len());
        let Some(record) = resume::load_done::<ShardRecord>(sink, fingerprint, "", &name)? else {
            break;
        };
        let mut intact = record.entries.first().is_some_and(|e| e.path == name);
        for entry in &record.entries {
            intact &= sink.size(&entry.path)? == Some(entry.size);
        }
        if !intact {
            break;
        }
        records.push(record);
    }
    let kept: BTreeSet<String> = records
        .iter()
        .flat_map(|r| r.entries.iter().map(|e| e.path.clone()))
        .collect();
    for name in sink.list()? {
        if is_own_file(&name, prefix) && !kept.contains(&name) {
            sink.remove(&name)?;
        }
    }
    Ok(records)
}

/// The options that decide the output bytes.
fn options(
    settings: &TokenizeSettings,
    tokenizer: &Tokenizer,
    dtype: Dtype,
    eod: Option<&(String, u32)>,
) -> BTreeMap<String, Value> {
    let mut o = BTreeMap::new();
    o.insert("tokenizer".into(), Value::from(tokenizer.name()));
    if let Some(sha) = tokenizer.file_sha256() {
        o.insert("tokenizer_sha256".into(), Value::from(sha));
    }
    o.insert("vocab_size".into(), Value::from(tokenizer.vocab_size()));
    o.insert("dtype".into(), Value::from(dtype.name()));
    o.insert("eod".into(), Value::from(eod.is_some()));
    o.insert(
        "eod_token".into(),
        eod.map_or(Value::Null, |(t, _)| Value::from(t.clone())),
    );
    o.insert(
        "eod_id".into(),
        eod.map_or(Value::Null, |(_, id)| Value::from(*id)),
    );
    o.insert("allow_special".into(), Value::from(settings.allow_special));
    o.insert("field".into(), Value::from(settings.field.clone()));
    o.insert(
        "shard_tokens".into(),
        settings.shard_tokens.map_or(Value::Null, Value::from),
    );
    o.insert("prefix".into(), Value::from(settings.prefix.clone()));
    o
}

fn input_summary(inputs: &[InputFile]) -> InputSummary {
    let mut lines = Vec::new();
    for f in inputs {
        lines.extend_from_slice(f.display.as_bytes());
        lines.push(0);
        lines.extend_from_slice(f.size.to_string().as_bytes());
        lines.push(b'\n');
    }
    InputSummary {
        files: inputs.len() as u64,
        bytes: inputs.iter().map(|f| f.size).sum(),
        listing_sha256: sha256_hex(&lines),
    }
}

/// Identifies a run: tool version, format, options and input listing.
fn fingerprint(manifest: &Manifest) -> String {
    let mut out = Vec::new();
    let value = serde_json::json!({
        "tool_version": manifest.tool_version,
        "kind": "tokenize",
        "format": manifest.format,
        "options": manifest.options,
        "input": manifest.input,
    });
    canonical_json(&value, &mut out);
    sha256_hex(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_files_by_name() {
        assert!(is_own_file("tokens_000000.bin", "tokens"));
        assert!(is_own_file("tokens_000012.idx", "tokens"));
        assert!(is_own_file("a_b_1234567.bin", "a_b"));
        assert!(!is_own_file("tokens_12.bin", "tokens"));
        assert!(!is_own_file("tokens_000000.txt", "tokens"));
        assert!(!is_own_file("other_000000.bin", "tokens"));
        assert!(!is_own_file("manifest.json", "tokens"));
    }
}
