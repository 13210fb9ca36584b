//! The input cut into units of work, in input order, handed out one at a time as the
//! workers ask. A unit is read by the worker that takes it, so no thread reads the whole
//! input:
//!
//! - plain JSONL is cut into byte ranges of about [`BATCH_BYTES`]: a range holds the
//!   lines that *start* in it (its reader skips the end of the line it starts in, which
//!   belongs to the range before, and reads on past its end to finish its last line);
//!   small files and text files are grouped, whole, into units of about that size;
//! - a Parquet file is cut by row groups (its footer is read here, once);
//! - a compressed JSONL file cannot be cut: it is one unit, read in order by one worker
//!   while the others tokenize what it reads; several such files are read at once.
//!
//! Where the cuts fall does not change the output: the records, and their order, are
//! the same whatever the cut.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use shardsmith_store::RangeRead;

use crate::batch::Position;
use crate::input::{BATCH_BYTES, InputKind, StreamCompression, TextInput};
use crate::parquet::ParquetInput;
use crate::{Error, Result};

/// Input bytes per unit of plain files.
pub(crate) const CUT_BYTES: u64 = BATCH_BYTES as u64;

/// What a piece of a file costs at least, for grouping small files: a unit holds at
/// most `CUT_BYTES / FILE_COST` of them.
const FILE_COST: u64 = 4096;

/// One unit of work: its place in the input order and what to read.
pub(super) struct Unit {
    pub(super) seq: u64,
    pub(super) job: Job,
}

/// What a unit reads.
pub(super) enum Job {
    /// Lines of plain JSONL files and whole text files, read with positioned reads into
    /// one batch.
    Pieces(Vec<Piece>),
    /// A compressed JSONL file from this position on, read in order, batch by batch.
    Stream(Position),
    /// Rows of one row group of a Parquet file, batch by batch.
    Rows {
        file: usize,
        parquet: Arc<ParquetInput>,
        rows: Range<u64>,
        /// The file's last row group (the file counts as read once it is done).
        last: bool,
    },
    /// An input that cannot be read: the run stops there, after what comes before it.
    Failed(Error),
    /// The end of the input, and its position.
    End(Position),
}

/// A piece of one file within a unit.
pub(super) struct Piece {
    pub(super) file: usize,
    /// JSONL: the lines that start in this byte range. Text: the whole file (its size).
    pub(super) range: Range<u64>,
    /// `range.start` is known to be a line's start (the file's first byte, or where a
    /// resumed run continues); else the line that holds it belongs to the piece before.
    pub(super) at_line_start: bool,
    /// The file, opened once for all its pieces (JSONL).
    pub(super) handle: Arc<Handle>,
}

/// A file opened for positioned reads by the first worker that needs it.
#[derive(Default)]
pub(super) struct Handle(Mutex<Option<Arc<dyn RangeRead>>>);

impl Handle {
    /// The file, opened now if it was not.
    pub(super) fn get(&self, input: &TextInput) -> Result<Arc<dyn RangeRead>> {
        let mut opened = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(file) = &*opened {
            return Ok(file.clone());
        }
        let file = input
            .source
            .open_ranged(&input.rel)
            .map_err(|e| Error::io("reading input", &input.display, e.into()))?;
        *opened = Some(file.clone());
        Ok(file)
    }
}

/// Hands out the units of `inputs` from a start position on, in order.
pub(crate) struct Planner<'a> {
    inputs: &'a [TextInput],
    field: &'a str,
    cut: u64,
    start: Position,
    /// The file being planned, the next byte (or row) of it to plan, and whether that is
    /// known to be a line start.
    file: usize,
    at: u64,
    at_line_start: bool,
    handle: Arc<Handle>,
    /// Row groups of the Parquet file being planned.
    groups: VecDeque<Job>,
    seq: u64,
    ended: bool,
}

impl<'a> Planner<'a> {
    /// The units of `inputs` from `start` (a record's start) on, plain files cut every
    /// `cut` bytes; `field` is the Parquet column.
    pub(crate) fn new(inputs: &'a [TextInput], field: &'a str, start: Position, cut: u64) -> Self {
        let mut planner = Self {
            inputs,
            field,
            cut: cut.max(1),
            start,
            file: start.file,
            at: 0,
            at_line_start: true,
            handle: Arc::default(),
            groups: VecDeque::new(),
            seq: 0,
            ended: false,
        };
        planner.enter(start.file);
        planner
    }

    /// Starts planning file `file`: from the start position in the file it names, else
    /// from the file's start (or its span's).
    fn enter(&mut self, file: usize) {
        self.file = file;
        self.handle = Arc::default();
        let span_start = self
            .inputs
            .get(file)
            .and_then(|input| input.span.as_ref())
            .map_or(0, |span| span.start);
        if file == self.start.file && self.start.offset > 0 {
            (self.at, self.at_line_start) = (self.start.offset, true);
        } else {
            (self.at, self.at_line_start) = (span_start, span_start == 0);
        }
    }

    /// The position file `file`'s reading starts at.
    fn from(&self, file: usize) -> Position {
        if file == self.start.file {
            self.start
        } else {
            Position {
                file,
                offset: 0,
                line: 1,
            }
        }
    }

    /// The input files.
    pub(super) fn inputs(&self) -> &'a [TextInput] {
        self.inputs
    }

    /// The sequence number of the next unit.
    pub(super) fn next_seq(&self) -> u64 {
        self.seq
    }

    /// True when every unit was handed out.
    pub(super) fn exhausted(&self) -> bool {
        self.ended
    }

    /// The next unit, or `None` after the last ([`Job::End`]).
    pub(super) fn next_unit(&mut self) -> Option<Unit> {
        let job = self.next_job()?;
        let seq = self.seq;
        self.seq += 1;
        Some(Unit { seq, job })
    }

    fn next_job(&mut self) -> Option<Job> {
        if self.ended {
            return None;
        }
        if let Some(group) = self.groups.pop_front() {
            return Some(group);
        }
        let mut pieces = Vec::new();
        let mut budget = self.cut;
        while self.file < self.inputs.len() && budget > 0 {
            let file = self.file;
            let input = &self.inputs[file];
            match input.kind {
                InputKind::Jsonl(StreamCompression::None) => {
                    let end = input.span.as_ref().map_or(input.size, |span| span.end);
                    if self.at < end {
                        let take = budget.min(end - self.at);
                        pieces.push(Piece {
                            file,
                            range: self.at..self.at + take,
                            at_line_start: self.at_line_start,
                            handle: self.handle.clone(),
                        });
                        budget = budget.saturating_sub(take.max(FILE_COST));
                        self.at += take;
                        self.at_line_start = false;
                    }
                    if self.at >= end {
                        self.enter(file + 1);
                    }
                }
                InputKind::Text => {
                    pieces.push(Piece {
                        file,
                        range: 0..input.size,
                        at_line_start: true,
                        handle: self.handle.clone(),
                    });
                    budget = budget.saturating_sub(input.size.max(FILE_COST));
                    self.enter(file + 1);
                }
                InputKind::Jsonl(_) | InputKind::Parquet if !pieces.is_empty() => break,
                InputKind::Jsonl(_) => {
                    let from = self.from(file);
                    self.enter(file + 1);
                    return Some(Job::Stream(from));
                }
                InputKind::Parquet => {
                    let from = self.from(file).offset;
                    self.enter(file + 1);
                    match self.row_groups(file, from) {
                        Ok(groups) => self.groups = groups,
                        Err(e) => return Some(Job::Failed(e)),
                    }
                    if let Some(group) = self.groups.pop_front() {
                        return Some(group);
                    }
                }
            }
        }
        if !pieces.is_empty() {
            return Some(Job::Pieces(pieces));
        }
        self.ended = true;
        Some(Job::End(Position {
            file: self.inputs.len(),
            offset: 0,
            line: 1,
        }))
    }

    /// The row groups of Parquet file `file` from row `from` on, one unit each.
    fn row_groups(&self, file: usize, from: u64) -> Result<VecDeque<Job>> {
        let input = &self.inputs[file];
        let source = input
            .source
            .open_ranged(&input.rel)
            .map_err(|e| Error::io("reading input", &input.display, e.into()))?;
        let parquet = Arc::new(ParquetInput::open(source, &input.display, self.field)?);
        let mut groups = parquet.groups_from(from)?;
        if groups.is_empty() {
            // No rows left: one empty unit still counts the file as read.
            groups.push(from..from);
        }
        let count = groups.len();
        Ok(groups
            .into_iter()
            .enumerate()
            .map(|(i, rows)| Job::Rows {
                file,
                parquet: parquet.clone(),
                rows,
                last: i + 1 == count,
            })
            .collect())
    }
}
