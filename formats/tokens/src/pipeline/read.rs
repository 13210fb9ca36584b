//! Reading a unit ([`super::plan`]) into batches: the lines of a plain JSONL byte range
//! (positioned reads), whole text files, a compressed file or a Parquet row group (in
//! order, batch by batch).

use std::io;
use std::ops::Range;
use std::sync::Arc;

use shardsmith_store::RangeRead;

use super::plan::Piece;
use crate::batch::{Batch, Position, Record, RecordKind};
use crate::input::{BATCH_BYTES, InputKind, Reader, TextInput, push_text_file};
use crate::parquet::{ParquetInput, ParquetReader};
use crate::{Error, Result};

/// Bytes read at a time past a range's end, to finish its last line.
const MORE: usize = 64 << 10;

/// Reads `pieces` into `batch` (emptied first, its buffers kept).
pub(super) fn read_pieces(inputs: &[TextInput], pieces: &[Piece], batch: &mut Batch) -> Result<()> {
    batch.data.clear();
    batch.records.clear();
    batch.input_bytes = 0;
    for piece in pieces {
        let input = &inputs[piece.file];
        let err = |e: io::Error| Error::io("reading input", &input.display, e);
        if input.kind == InputKind::Text {
            batch.input_bytes += push_text_file(input, piece.file, batch)?;
        } else {
            let file = piece.handle.get(input)?;
            read_lines(file.as_ref(), piece, batch).map_err(err)?;
            batch.input_bytes += piece.range.end - piece.range.start;
        }
    }
    Ok(())
}

/// Appends to `batch` the lines of `piece` that start in its range: from the range's
/// start if that is a line start, else from the first line start after it; the last
/// one read to its end, past the range if need be. A line's record leaves out its
/// `\n`; the last line of a file may have none. The line numbers are left 0: the
/// writer numbers the lines, in order.
fn read_lines(file: &dyn RangeRead, piece: &Piece, batch: &mut Batch) -> io::Result<()> {
    let Range { start, end } = piece.range;
    // One byte before a range that may start inside a line: if it is a `\n`, the range
    // starts with a line.
    let from = if piece.at_line_start {
        start
    } else {
        start - 1
    };
    let base = batch.data.len();
    let mut eof = read_at(file, from, (end - from) as usize, &mut batch.data)?;
    let offset = |i: usize| from + (i - base) as u64;
    let mut line = base;
    if !piece.at_line_start {
        match memchr::memchr(b'\n', &batch.data[base..]) {
            Some(i) => line = base + i + 1,
            // No line starts in the range.
            None => return Ok(()),
        }
    }
    // Where the search for the current line's end resumes.
    let mut searched = line;
    while offset(line) < end && line < batch.data.len() {
        match memchr::memchr(b'\n', &batch.data[searched..]) {
            Some(i) => {
                let stop = searched + i;
                push_line(batch, piece.file, line..stop, offset(line));
                line = stop + 1;
                searched = line;
            }
            None if eof => {
                let stop = batch.data.len();
                push_line(batch, piece.file, line..stop, offset(line));
                line = stop;
            }
            None => {
                searched = batch.data.len();
                eof = read_at(file, offset(searched), MORE, &mut batch.data)?;
            }
        }
    }
    Ok(())
}

fn push_line(batch: &mut Batch, file: usize, range: Range<usize>, offset: u64) {
    batch.records.push(Record {
        pos: Position {
            file,
            offset,
            line: 0,
        },
        range,
        kind: RecordKind::Json,
    });
}

/// Appends up to `len` bytes of `file` at `offset` to `out`; true when it ended first.
fn read_at(file: &dyn RangeRead, offset: u64, len: usize, out: &mut Vec<u8>) -> io::Result<bool> {
    let start = out.len();
    out.resize(start + len, 0);
    let mut got = 0;
    while got < len {
        match file.read_at(offset + got as u64, &mut out[start + got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        }
    }
    out.truncate(start + got);
    Ok(got < len)
}

/// A unit read in order, batch by batch: a compressed JSONL file, or a Parquet row
/// group.
pub(super) enum Stream<'a> {
    Lines(Reader<'a>),
    Rows {
        reader: Box<ParquetReader>,
        file: usize,
        /// The file's size, counted as read when its last row group is done.
        size: Option<u64>,
    },
}

impl<'a> Stream<'a> {
    /// The compressed file `from.file` of `inputs`, from `from` on.
    pub(super) fn lines(inputs: &'a [TextInput], field: &str, from: Position) -> Self {
        Stream::Lines(Reader::new(&inputs[..=from.file], field, from))
    }

    /// Rows `rows` of file `file` of `inputs`; `last` when they end its last row group.
    pub(super) fn rows(
        inputs: &[TextInput],
        file: usize,
        parquet: &Arc<ParquetInput>,
        rows: Range<u64>,
        last: bool,
    ) -> Result<Self> {
        Ok(Stream::Rows {
            reader: Box::new(parquet.reader(rows)?),
            file,
            size: last.then_some(inputs[file].size),
        })
    }

    /// Fills `batch` (emptied first) with the next records; false at the end.
    pub(super) fn fill(&mut self, batch: &mut Batch) -> Result<bool> {
        match self {
            Stream::Lines(reader) => reader.fill(batch),
            Stream::Rows { reader, file, size } => {
                batch.data.clear();
                batch.records.clear();
                batch.input_bytes = 0;
                let mut done = false;
                while !done && batch.data.len() < BATCH_BYTES {
                    done = reader.next_into(*file, batch)?;
                }
                if done {
                    batch.input_bytes = size.take().unwrap_or(0);
                }
                Ok(!batch.records.is_empty() || batch.input_bytes > 0)
            }
        }
    }
}
