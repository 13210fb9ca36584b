//! Where documents come from: JSONL (plain, `.gz`, `.zst`), Parquet and plain-text files,
//! listed in a fixed order, and a [`Reader`] that reads them in that order, cut into
//! batches of about [`BATCH_BYTES`] of text (the pipeline reads a compressed file with
//! it; other files it cuts into units read apart, see `pipeline/plan.rs`). Every record
//! carries its [`Position`], so a run can restart exactly where a shard ended.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use shardsmith_store::{InputSource, LocalTree};

pub use super::batch::{Batch, Position, Record, RecordKind};
use super::parquet::ParquetReader;
use crate::{Error, Result};

/// Text gathered per batch before it is handed to a worker.
pub const BATCH_BYTES: usize = 1 << 20;

/// How an input file holds its documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// One JSON object per line.
    Jsonl(StreamCompression),
    /// A Parquet file; one row per document.
    Parquet,
    /// A plain UTF-8 text file: one document.
    Text,
}

/// StreamCompression of a JSONL file (by extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamCompression {
    /// None.
    None,
    /// gzip (`.gz`), multi-member allowed.
    Gzip,
    /// Zstandard (`.zst`, `.zstd`).
    Zstd,
}

/// An input named on the command line, read through the store: a directory (every
/// known file it lists) or one file.
pub struct InputRoot {
    /// Where its files are read from.
    pub source: Arc<dyn InputSource>,
    /// The input as named (`corpus/`, `a.jsonl`), for messages and the manifest.
    pub display: String,
    /// The one file to read, with its size, when the input named a file.
    pub file: Option<(String, u64)>,
}

impl InputRoot {
    /// A local directory or file.
    pub fn local(path: &Path) -> Result<Self> {
        let (tree, file) = LocalTree::for_path(path)?;
        Ok(Self {
            source: Arc::new(tree),
            display: path.display().to_string(),
            file,
        })
    }
}

/// One input file.
#[derive(Clone)]
pub struct TextInput {
    /// Where it is read from.
    pub source: Arc<dyn InputSource>,
    /// Its name in the source.
    pub rel: String,
    /// The path as shown in messages and the manifest.
    pub display: String,
    /// Size when listed.
    pub size: u64,
    /// How it holds documents.
    pub kind: InputKind,
    /// Only the lines that start in this byte range (an uncompressed JSONL file cut
    /// between the tasks of a split run); the whole file when `None`. Line numbers are
    /// not known inside a span that starts past 0: records there are told by byte offset.
    pub span: Option<std::ops::Range<u64>>,
}

impl std::fmt::Debug for TextInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextInput")
            .field("display", &self.display)
            .field("size", &self.size)
            .field("kind", &self.kind)
            .finish()
    }
}

/// Lists `roots` (files, or directories listed in path order) into input files.
/// Inside directories only known extensions are taken (`.jsonl`, `.json`, `.ndjson`,
/// optionally `.gz`/`.zst`; `.parquet`; `.txt`, `.text`, `.md`), never a hidden file or
/// directory nor a manifest shardsmith wrote; a file named explicitly with another
/// extension is read as plain text.
pub fn list(roots: &[InputRoot]) -> Result<Vec<TextInput>> {
    let mut out = Vec::new();
    for root in roots {
        if let Some((rel, size)) = &root.file {
            out.push(TextInput {
                source: root.source.clone(),
                rel: rel.clone(),
                display: root.display.clone(),
                size: *size,
                kind: kind_of(Path::new(rel)).unwrap_or(InputKind::Text),
                span: None,
            });
            continue;
        }
        for f in root.source.list()?.files {
            let hidden = f.rel.split('/').any(|part| part.starts_with('.'));
            let Some(kind) = kind_of(Path::new(&f.rel)).filter(|_| !hidden) else {
                continue;
            };
            out.push(TextInput {
                source: root.source.clone(),
                display: Path::new(&root.display).join(&f.rel).display().to_string(),
                rel: f.rel,
                size: f.size,
                kind,
                span: None,
            });
        }
    }
    Ok(out)
}

/// The kind of a file by its name, or `None` for an unknown extension.
pub fn kind_of(path: &Path) -> Option<InputKind> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let (stem, compression) = if let Some(stem) = name.strip_suffix(".gz") {
        (stem, StreamCompression::Gzip)
    } else if let Some(stem) = name
        .strip_suffix(".zst")
        .or_else(|| name.strip_suffix(".zstd"))
    {
        (stem, StreamCompression::Zstd)
    } else {
        (name.as_str(), StreamCompression::None)
    };
    let ext = stem.rsplit_once('.').map(|(_, e)| e)?;
    match (ext, compression) {
        ("jsonl" | "json" | "ndjson", c) => Some(InputKind::Jsonl(c)),
        ("parquet", StreamCompression::None) => Some(InputKind::Parquet),
        ("txt" | "text" | "md", StreamCompression::None) => Some(InputKind::Text),
        _ => None,
    }
}

/// Counts the bytes read from the file, for progress.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

enum Open {
    Lines {
        reader: Box<dyn BufRead + Send>,
        offset: u64,
        line: u64,
    },
    Parquet(Box<ParquetReader>),
    Text,
}

/// Reads the inputs from a position on, batch by batch.
pub struct Reader<'a> {
    files: &'a [TextInput],
    field: String,
    file: usize,
    open: Option<Open>,
    started: Position,
    consumed: Arc<AtomicU64>,
    reported: u64,
}

impl<'a> Reader<'a> {
    /// A reader of `files` starting at `from` (the start of a record). `field` is the
    /// Parquet column holding the text.
    pub fn new(files: &'a [TextInput], field: &str, from: Position) -> Self {
        Self {
            files,
            field: field.to_string(),
            file: from.file,
            open: None,
            started: from,
            consumed: Arc::new(AtomicU64::new(0)),
            reported: 0,
        }
    }

    fn io_err(&self, e: impl Into<io::Error>) -> Error {
        Error::io("reading input", &self.files[self.file].display, e.into())
    }

    /// Opens the current file, skipping to the start position if it is the first.
    fn open_current(&mut self) -> Result<Open> {
        let input = &self.files[self.file];
        let from = if self.file == self.started.file {
            self.started
        } else {
            Position {
                file: self.file,
                offset: 0,
                line: 1,
            }
        };
        let counting = |inner: Box<dyn Read + Send>| Counting {
            inner,
            count: self.consumed.clone(),
        };
        Ok(match input.kind {
            InputKind::Jsonl(compression) => {
                let file = if compression == StreamCompression::None {
                    input.source.open_at(&input.rel, from.offset)
                } else {
                    input.source.open(&input.rel)
                }
                .map_err(|e| self.io_err(e))?;
                let raw = counting(file);
                let mut reader: Box<dyn BufRead + Send> = match compression {
                    StreamCompression::None => Box::new(BufReader::with_capacity(1 << 20, raw)),
                    StreamCompression::Gzip => Box::new(BufReader::with_capacity(
                        1 << 20,
                        flate2::read::MultiGzDecoder::new(BufReader::new(raw)),
                    )),
                    StreamCompression::Zstd => Box::new(BufReader::with_capacity(
                        1 << 20,
                        zstd::stream::read::Decoder::new(raw).map_err(|e| self.io_err(e))?,
                    )),
                };
                // A span past the file's start begins with the first line that starts in
                // it: the partial line before is skipped (it belongs to the span before).
                if let Some(span) = &input.span
                    && from.offset == 0
                    && span.start > 0
                {
                    drop(reader);
                    let file = input
                        .source
                        .open_at(&input.rel, span.start - 1)
                        .map_err(|e| self.io_err(e))?;
                    let mut reader: Box<dyn BufRead + Send> =
                        Box::new(BufReader::with_capacity(1 << 20, counting(file)));
                    let n = reader
                        .read_until(b'\n', &mut Vec::new())
                        .map_err(|e| self.io_err(e))?;
                    return Ok(Open::Lines {
                        reader,
                        offset: span.start - 1 + n as u64,
                        line: 0,
                    });
                }
                if compression != StreamCompression::None && from.offset > 0 {
                    let skipped = io::copy(&mut (&mut reader).take(from.offset), &mut io::sink())
                        .map_err(|e| self.io_err(e))?;
                    if skipped != from.offset {
                        return Err(self.io_err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "input is shorter than when the interrupted run read it",
                        )));
                    }
                }
                Open::Lines {
                    reader,
                    offset: from.offset,
                    line: from.line,
                }
            }
            InputKind::Parquet => Open::Parquet(Box::new(ParquetReader::open(
                input
                    .source
                    .open_ranged(&input.rel)
                    .map_err(|e| self.io_err(e))?,
                &input.display,
                &self.field,
                from.offset,
            )?)),
            InputKind::Text => Open::Text,
        })
    }

    /// The next batch, or `None` when every file was read.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let mut batch = Batch {
            data: Vec::with_capacity(BATCH_BYTES + (64 << 10)),
            ..Batch::default()
        };
        Ok(self.fill(&mut batch)?.then_some(batch))
    }

    /// Fills `batch` (emptied first, its buffers kept) with the next records; false
    /// when every file was read.
    pub fn fill(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.data.clear();
        batch.records.clear();
        while batch.data.len() < BATCH_BYTES {
            if self.file >= self.files.len() {
                break;
            }
            if self.open.is_none() {
                self.open = Some(self.open_current()?);
            }
            let file = self.file;
            let done = match self.open.as_mut().expect("opened above") {
                Open::Lines {
                    reader,
                    offset,
                    line,
                } => {
                    let start = batch.data.len();
                    let past_span = self.files[file]
                        .span
                        .as_ref()
                        .is_some_and(|span| *offset >= span.end);
                    let n = if past_span {
                        0
                    } else {
                        reader
                            .read_until(b'\n', &mut batch.data)
                            .map_err(|e| Error::io("reading input", &self.files[file].display, e))?
                    };
                    if n == 0 {
                        true
                    } else {
                        let mut end = batch.data.len();
                        if batch.data[end - 1] == b'\n' {
                            end -= 1;
                        }
                        batch.records.push(Record {
                            pos: Position {
                                file,
                                offset: *offset,
                                line: *line,
                            },
                            range: start..end,
                            kind: RecordKind::Json,
                        });
                        *offset += n as u64;
                        // 0: unknown inside a span (records are told by byte offset).
                        if *line > 0 {
                            *line += 1;
                        }
                        false
                    }
                }
                Open::Parquet(reader) => {
                    let done = reader.next_into(file, batch)?;
                    // Read by ranges, not streamed: the file counts as read once done.
                    if done {
                        self.consumed
                            .fetch_add(self.files[file].size, Ordering::Relaxed);
                    }
                    done
                }
                Open::Text => {
                    let read = push_text_file(&self.files[file], file, batch)?;
                    self.consumed.fetch_add(read, Ordering::Relaxed);
                    true
                }
            };
            if done {
                self.open = None;
                self.file += 1;
            }
        }
        let consumed = self.consumed.load(Ordering::Relaxed);
        batch.input_bytes = consumed - self.reported;
        self.reported = consumed;
        Ok(!batch.records.is_empty())
    }

    /// Where the next record starts (the end of the input when all was read).
    pub fn position(&self) -> Position {
        match &self.open {
            Some(Open::Lines { offset, line, .. }) => Position {
                file: self.file,
                offset: *offset,
                line: *line,
            },
            Some(Open::Parquet(r)) => r.position(self.file),
            _ => Position {
                file: self.file,
                offset: 0,
                line: 1,
            },
        }
    }
}

/// Appends the whole of text file `input` (the `file`-th input) to `batch` as one
/// document, or as one bad record when it is not UTF-8; returns the bytes read.
pub(crate) fn push_text_file(input: &TextInput, file: usize, batch: &mut Batch) -> Result<u64> {
    let err = |e: io::Error| Error::io("reading input", &input.display, e);
    let mut f = input.source.open(&input.rel).map_err(|e| err(e.into()))?;
    let start = batch.data.len();
    f.read_to_end(&mut batch.data).map_err(err)?;
    let kind = match std::str::from_utf8(&batch.data[start..]) {
        Ok(_) => RecordKind::Text,
        Err(e) => RecordKind::Bad(format!(
            "is not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        )),
    };
    batch.records.push(Record {
        pos: Position {
            file,
            offset: 0,
            line: 1,
        },
        range: start..batch.data.len(),
        kind,
    });
    Ok((batch.data.len() - start) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension() {
        for (name, kind) in [
            ("a.jsonl", Some(InputKind::Jsonl(StreamCompression::None))),
            ("a.JSON.gz", Some(InputKind::Jsonl(StreamCompression::Gzip))),
            (
                "dir/x.ndjson.zst",
                Some(InputKind::Jsonl(StreamCompression::Zstd)),
            ),
            ("a.parquet", Some(InputKind::Parquet)),
            ("notes.txt", Some(InputKind::Text)),
            ("a.parquet.gz", None),
            ("a.bin", None),
            ("jsonl", None),
        ] {
            assert_eq!(kind_of(Path::new(name)), kind, "{name}");
        }
    }

    fn read_all(files: &[TextInput], from: Position) -> Vec<(Position, Vec<u8>)> {
        let mut reader = Reader::new(files, "text", from);
        let mut out = Vec::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            for r in batch.records {
                out.push((r.pos, batch.data[r.range].to_vec()));
            }
        }
        out
    }

    #[test]
    fn lines_of_plain_and_compressed_files_resume_at_any_record() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"text\":\"a\"}\n\n{\"text\":\"b\"}\r\n{\"text\":\"c\"}";
        std::fs::write(dir.path().join("1.jsonl"), text).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        std::fs::write(dir.path().join("2.jsonl.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(
            dir.path().join("3.jsonl.zst"),
            zstd::encode_all(text.as_bytes(), 1).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.path().join("4.txt"), "whole\nfile").unwrap();
        std::fs::write(dir.path().join("skip.bin"), "not an input").unwrap();
        let files = list(&[InputRoot::local(dir.path()).unwrap()]).unwrap();
        assert_eq!(files.len(), 4);
        let all = read_all(&files, Position::default());
        assert_eq!(all.len(), 13);
        assert_eq!(
            all[2].0,
            Position {
                file: 0,
                offset: 14,
                line: 3
            }
        );
        assert_eq!(all[2].1, b"{\"text\":\"b\"}\r");
        assert_eq!(all[1].1, b"");
        assert_eq!(all[12].1, b"whole\nfile");
        for (i, (pos, _)) in all.iter().enumerate() {
            let rest = read_all(&files, *pos);
            assert_eq!(rest, all[i..], "resume at {pos:?}");
        }
    }
}
