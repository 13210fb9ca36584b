//! The `tokenize` pipeline proper: reader (the calling thread) → workers → ordered
//! writer → committer. Memory is bounded by the tickets: at most 2 × workers + 2 batches
//! are read and not yet written.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Mutex, PoisonError};

use shardsmith_manifest::Skipped;

use super::input::{Batch, Position, Reader, TextInput};
use super::settings::{TokenizeObserver, TokenizeSettings};
use super::shard_record::{SKIPPED_LISTED, ShardRecord, Stats};
use super::tokenizer::{Scratch, Tokenizer};
use super::work::{Tokenized, tokenize_batch};
use super::write::{ShardWriter, TokenDtype, TokenFormat};
use crate::{Error, Result};
use shardsmith_store::{OutputSink, ShardFile, resume};

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
pub(super) fn pipeline<'a>(
    inputs: &[TextInput],
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
    let (batch_tx, batch_rx) = mpsc::sync_channel::<(u64, Batch)>(threads);
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
                if let Err(e) = done {
                    failed.store(true, Ordering::Relaxed);
                    return Err(Error::from(e));
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
            .unwrap_or(Err(Error::Panicked("the writer thread")));
        let committed = committer
            .join()
            .unwrap_or(Err(Error::Panicked("the commit thread")));
        // A reader error stops the writer short; a commit error stops the writer.
        read?;
        committed?;
        written
    })
}

/// Reads the input into batches for the workers, at most `in_flight` batches ahead of
/// the writer; sends the end position to the writer when done.
fn read_all(
    inputs: &[TextInput],
    field: &str,
    start: Position,
    batches: SyncSender<(u64, Batch)>,
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
                return Err(Error::Stopped("a finished shard could not be committed"));
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
    Err(Error::Stopped("the input stopped before its end"))
}

/// The writer's state: the shard being written and everything written so far.
pub(super) struct Output<'a> {
    pub(super) sink: &'a dyn OutputSink,
    pub(super) format: TokenFormat,
    pub(super) dtype: TokenDtype,
    pub(super) vocab: u32,
    pub(super) prefix: &'a str,
    pub(super) limit: Option<u64>,
    pub(super) eod: Option<u32>,
    pub(super) strict: bool,
    pub(super) inputs: &'a [TextInput],
    pub(super) current: Option<ShardWriter>,
    /// Index of the shard being (or next to be) written.
    pub(super) index: usize,
    /// Tokens of the first document already written by an interrupted run.
    pub(super) carry: u64,
    pub(super) stats: Stats,
    pub(super) ids: Vec<u32>,
    pub(super) records: Vec<ShardRecord>,
    pub(super) input_bytes: u64,
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
        // Inside a span of a file cut between tasks the line number is not known.
        let at = if pos.line == 0 {
            format!("the line at byte {}", pos.offset)
        } else {
            format!("line {}", pos.line)
        };
        if self.strict {
            return Err(Error::BadRecord {
                path,
                line: pos.line,
                reason: format!(
                    "{}{reason} (--strict makes every malformed record an error)",
                    if pos.line == 0 {
                        format!("{at}: ")
                    } else {
                        String::new()
                    }
                ),
            });
        }
        self.stats.skipped_total += 1;
        if self.stats.skipped.len() < SKIPPED_LISTED {
            self.stats.skipped.push(Skipped {
                path,
                reason: format!("{at}: {reason}"),
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
            .map_err(|_| Error::Stopped("the commit thread ended early"))
    }
}
