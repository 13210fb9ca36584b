//! The writer's side of the pipeline: the tokenized batches, taken in input order,
//! appended to the current shard; a full shard goes to the committer. Also numbers the
//! JSON lines, which only the input order tells.

use std::sync::mpsc::Sender;

use std::collections::HashMap;

use shardsmith_manifest::{Duplicate, Skipped};

use crate::batch::Position;
use crate::input::{InputKind, StreamCompression, TextInput};
use crate::shard_record::{SKIPPED_LISTED, ShardRecord, Stats};
use crate::work::{DocOut, TextDigest, Tokenized};
use crate::write::{ShardWriter, TokenDtype, TokenFormat};
use crate::{Error, Result};
use shardsmith_store::{OutputSink, ShardFile};

/// A finished shard on its way to durability.
pub(super) struct Commit {
    pub(super) name: String,
    pub(super) record: ShardRecord,
    pub(super) files: Vec<Box<dyn ShardFile>>,
}

/// The writer's state: the shard being written and everything written so far.
pub(crate) struct Output<'a> {
    pub(crate) sink: &'a dyn OutputSink,
    pub(crate) format: TokenFormat,
    pub(crate) dtype: TokenDtype,
    pub(crate) vocab: u32,
    pub(crate) prefix: &'a str,
    pub(crate) limit: Option<u64>,
    pub(crate) eod: Option<u32>,
    pub(crate) strict: bool,
    pub(crate) inputs: &'a [TextInput],
    pub(crate) current: Option<ShardWriter>,
    /// Index of the shard being (or next to be) written.
    pub(crate) index: usize,
    /// Tokens of the first document already written by an interrupted run.
    pub(crate) carry: u64,
    pub(crate) stats: Stats,
    pub(crate) records: Vec<ShardRecord>,
    pub(crate) input_bytes: u64,
    /// The file whose JSON lines are being numbered, and the number of its next line
    /// (0: not known, inside a span of a file cut between tasks).
    pub(crate) line: (usize, u64),
    /// With `--dedup`: where each text written so far first occurs, by digest.
    pub(crate) seen: Option<HashMap<TextDigest, Position>>,
    /// With `--dedup`: the documents the current shard starts (for its record).
    pub(crate) kept: Vec<(TextDigest, Position)>,
}

impl Output<'_> {
    /// Appends the documents of `batch` (the next in input order).
    pub(super) fn batch(&mut self, batch: &Tokenized, commits: &Sender<Commit>) -> Result<()> {
        let size = self.dtype.size() as usize;
        let mut at = 0;
        for doc in &batch.docs {
            let mut pos = doc.pos;
            if doc.json {
                pos.line = self.next_line(pos.file);
            }
            let len = doc.tokens as usize * size;
            let bytes = &batch.bytes[at..at + len];
            at += len;
            if let Some(reason) = &doc.problem {
                self.problem(pos, reason)?;
            } else if self.duplicate(pos, doc) {
                continue;
            } else if let Some(id) = doc.out_of_vocabulary {
                return Err(self.open()?.out_of_vocabulary(id));
            } else {
                self.document(pos, bytes, doc.tokens, commits)?;
            }
        }
        self.input_bytes += batch.input_bytes;
        Ok(())
    }

    /// The number of the next JSON line of `file`: lines are counted from the file's
    /// first (or from where a resumed run starts), except in a span of a file that
    /// starts past its first byte.
    fn next_line(&mut self, file: usize) -> u64 {
        if self.line.0 != file {
            self.line = (file, first_line(&self.inputs[file]));
        }
        let line = self.line.1;
        if line > 0 {
            self.line.1 += 1;
        }
        line
    }

    /// With `--dedup`: true when the document's text repeats an earlier one's (it is
    /// counted and left out), else its text is recorded as seen.
    fn duplicate(&mut self, pos: Position, doc: &DocOut) -> bool {
        let (Some(seen), Some(digest)) = (self.seen.as_mut(), doc.digest) else {
            return false;
        };
        match seen.get(&digest).copied() {
            // A resumed run meets again the document an interrupted one had started.
            Some(first) if first == pos => false,
            Some(first) => {
                let duplicate = Duplicate {
                    key: self.place(pos),
                    of: self.place(first),
                };
                self.stats.duplicates.add(duplicate, doc.text_bytes);
                true
            }
            None => {
                seen.insert(digest, pos);
                self.kept.push((digest, pos));
                false
            }
        }
    }

    /// Where a document is, for the duplicates list: `FILE:LINE` (a JSON line or a
    /// Parquet row), `FILE@OFFSET` (a line whose number is not known), or `FILE`.
    fn place(&self, pos: Position) -> String {
        let path = &self.inputs[pos.file].display;
        match self.inputs[pos.file].kind {
            InputKind::Text => path.clone(),
            _ if pos.line > 0 => format!("{path}:{}", pos.line),
            _ => format!("{path}@{}", pos.offset),
        }
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
                self.unbounded_size(),
            )?);
        }
        Ok(self.current.as_mut().expect("opened above"))
    }

    /// An upper bound on a token file's bytes when no shard size bounds it: a token
    /// covers at least one byte of the decoded text, which is no longer than its JSON
    /// or text file, and a document adds at most one end-of-document token, so a file
    /// holds at most twice as many tokens as the input has bytes. `None` when an input's
    /// text can be larger than its file (compressed JSONL, Parquet).
    fn unbounded_size(&self) -> Option<u64> {
        let mut bytes = 0u64;
        for input in self.inputs {
            match input.kind {
                InputKind::Jsonl(StreamCompression::None) | InputKind::Text => {
                    bytes = bytes.saturating_add(input.size);
                }
                _ => return None,
            }
        }
        Some(bytes.saturating_mul(2).saturating_mul(self.dtype.size()))
    }

    fn full(&self) -> bool {
        match (&self.current, self.limit) {
            (Some(cur), Some(limit)) => cur.tokens() >= limit,
            _ => false,
        }
    }

    /// Appends a document of `n` tokens, `bytes` as encoded by the worker.
    fn document(
        &mut self,
        pos: Position,
        bytes: &[u8],
        n: u64,
        commits: &Sender<Commit>,
    ) -> Result<()> {
        if self.format == TokenFormat::Megatron {
            let overflows = match (&self.current, self.limit) {
                (Some(cur), Some(limit)) => cur.tokens() > 0 && cur.tokens() + n > limit,
                _ => false,
            };
            if overflows {
                self.close(pos, 0, commits)?;
            }
            let cur = self.open()?;
            cur.write(bytes)?;
            cur.document(n)?;
        } else {
            let format = self.format;
            let size = self.dtype.size() as usize;
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
                let take = room.min(n - written);
                let w = written as usize * size;
                cur.write(&bytes[w..w + take as usize * size])?;
                written += take;
                if format == TokenFormat::Nanogpt && written == n {
                    cur.document(0)?;
                }
            }
        }
        self.stats.documents += 1;
        self.stats.tokens += n;
        Ok(())
    }

    /// Finishes the current shard (if any) and hands it to the committer; the next shard
    /// starts at `next`, `carry` tokens into that document.
    pub(super) fn close(
        &mut self,
        next: Position,
        carry: u64,
        commits: &Sender<Commit>,
    ) -> Result<()> {
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
            kept: std::mem::take(&mut self.kept)
                .into_iter()
                .map(|(digest, pos)| (digest.iter().map(|b| format!("{b:02x}")).collect(), pos))
                .collect(),
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

/// The number of a file's first line: 0 (not known) in a span that starts past the
/// file's first byte.
pub(crate) fn first_line(input: &TextInput) -> u64 {
    if input.span.as_ref().is_some_and(|span| span.start > 0) {
        0
    } else {
        1
    }
}
