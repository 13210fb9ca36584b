//! Writing one planned shard: read each sample's files, check their content, encode,
//! hash while writing. Skips are decided per sample, before any of its bytes are written,
//! so a shard never holds part of a sample.

use std::io::{self, BufWriter, Read};

use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, FileEntry, HashingWriter, Skipped};

use super::PackObserver;
use super::state::ShardRecord;
use crate::content::{self, EDGE, Validation};
use crate::format::{Field, Payload, SampleSpec, ShardFormat};
use crate::sink::{OutputSink, ShardFile};
use crate::source::{InputSource, ReadError};
use crate::{Error, Result};

/// Samples up to this size are read into memory and checked before writing; larger ones
/// are checked in a streaming pre-read and then streamed into the shard.
pub(crate) const MEMORY_LIMIT: u64 = 16 << 20;

/// What the writer needs besides the samples.
pub(crate) struct WriteContext<'a> {
    pub source: &'a dyn InputSource,
    pub sink: &'a dyn OutputSink,
    pub format: &'a dyn ShardFormat,
    pub validation: Validation,
    pub strict: bool,
    pub observer: &'a dyn PackObserver,
}

enum Loaded {
    Memory(Vec<(usize, usize)>),
    Streams(Vec<Tracked>),
}

/// A streamed input that remembers how much it yielded and whether it failed, so a
/// failed copy names the input rather than the shard.
struct Tracked {
    inner: Box<dyn Read + Send>,
    read: u64,
    failed: Option<String>,
}

impl Read for Tracked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.read += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.failed = Some(e.to_string());
                Err(e)
            }
        }
    }
}

/// Writes `samples` as shard `name`; returns its record and the uncommitted file.
pub(crate) fn write_shard(
    ctx: &WriteContext<'_>,
    name: &str,
    samples: &[SampleSpec],
) -> Result<(ShardRecord, Box<dyn ShardFile>)> {
    let file = ctx.sink.create(name)?;
    let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, file), DEFAULT_CHUNK_SIZE);
    let mut encoder = ctx.format.encoder();
    let mut buf = Vec::new();
    let mut skipped = Vec::new();
    let (mut count, mut first, mut last) = (0u64, None, None);
    let write_err = |e: io::Error| Error::io("writing shard", name, e);
    for sample in samples {
        let loaded = match load(ctx, sample, &mut buf)? {
            Ok(loaded) => loaded,
            Err(skips) => {
                if ctx.strict {
                    let first = &skips[0];
                    return Err(Error::Strict {
                        path: first.path.clone(),
                        reason: first.reason.clone(),
                        count: skips.len(),
                    });
                }
                skipped.extend(skips);
                ctx.observer.advanced(1, sample.payload());
                continue;
            }
        };
        match loaded {
            Loaded::Memory(ranges) => {
                let mut fields: Vec<Field<'_>> = sample
                    .fields
                    .iter()
                    .zip(&ranges)
                    .map(|(f, &(start, end))| Field {
                        ext: &f.ext,
                        size: f.size,
                        payload: Payload::Bytes(&buf[start..end]),
                    })
                    .collect();
                encoder
                    .add(&mut out, &sample.key, &mut fields)
                    .map_err(write_err)?;
            }
            Loaded::Streams(mut readers) => {
                let mut fields: Vec<Field<'_>> = sample
                    .fields
                    .iter()
                    .zip(readers.iter_mut())
                    .map(|(f, r)| Field {
                        ext: &f.ext,
                        size: f.size,
                        payload: Payload::Stream(r),
                    })
                    .collect();
                if let Err(e) = encoder.add(&mut out, &sample.key, &mut fields) {
                    return Err(stream_error(e, sample, &readers, name));
                }
                for (field, reader) in sample.fields.iter().zip(readers.iter_mut()) {
                    let mut probe = [0u8; 1];
                    if reader.read(&mut probe).unwrap_or(0) > 0 {
                        return Err(Error::InputChanged {
                            path: sample.rel(field),
                            listed: field.size,
                            read: field.size + 1,
                        });
                    }
                }
            }
        }
        count += 1;
        if first.is_none() {
            first = Some(sample.key.clone());
        }
        last = Some(sample.key.clone());
        ctx.observer.advanced(1, sample.payload());
    }
    encoder.finish(&mut out).map_err(write_err)?;
    let (buffered, digest) = out.finish();
    let file = buffered
        .into_inner()
        .map_err(|e| write_err(e.into_error()))?;
    let mut entry = FileEntry::new(name, &digest);
    entry.format = Some(ctx.format.name().to_string());
    entry.samples = Some(count);
    entry.first_key = first;
    entry.last_key = last;
    Ok((ShardRecord { entry, skipped }, file))
}

/// A streamed copy failed: blame the input that failed or came up short, else the
/// shard. The shard is abandoned (its temporary file is removed) and the run stops.
fn stream_error(e: io::Error, sample: &SampleSpec, readers: &[Tracked], shard: &str) -> Error {
    for (field, reader) in sample.fields.iter().zip(readers) {
        if let Some(failure) = &reader.failed {
            return Error::io(
                "reading input",
                sample.rel(field),
                io::Error::other(failure.clone()),
            );
        }
        if reader.read < field.size && e.kind() == io::ErrorKind::UnexpectedEof {
            return Error::InputChanged {
                path: sample.rel(field),
                listed: field.size,
                read: reader.read,
            };
        }
    }
    Error::io("writing shard", shard, e)
}

/// Reads and checks a sample. `Ok(Err(skips))` when it must be left out.
fn load(
    ctx: &WriteContext<'_>,
    sample: &SampleSpec,
    buf: &mut Vec<u8>,
) -> Result<Result<Loaded, Vec<Skipped>>> {
    let leave_out = |bad: &str, reason: String| -> Vec<Skipped> {
        sample
            .fields
            .iter()
            .map(|f| Skipped {
                path: sample.rel(f),
                reason: if sample.rel(f) == bad {
                    reason.clone()
                } else {
                    format!(
                        "left out with `{bad}`, another file of sample `{}`",
                        sample.key
                    )
                },
            })
            .collect()
    };
    let changed = |rel: &str, listed: u64, read: u64| Error::InputChanged {
        path: rel.to_string(),
        listed,
        read,
    };
    let rels: Vec<String> = sample.fields.iter().map(|f| sample.rel(f)).collect();
    if sample.payload() <= MEMORY_LIMIT {
        buf.clear();
        let mut ranges = Vec::with_capacity(sample.fields.len());
        for (field, rel) in sample.fields.iter().zip(&rels) {
            let start = buf.len();
            match ctx.source.read_into(rel, field.size, buf) {
                Ok(()) => ranges.push((start, buf.len())),
                Err(ReadError::Unreadable(e)) => {
                    return Ok(Err(leave_out(rel, format!("cannot be read: {e}"))));
                }
                Err(ReadError::Changed { read }) => {
                    return Err(changed(rel, field.size, read));
                }
            }
        }
        for ((field, rel), &(start, end)) in sample.fields.iter().zip(&rels).zip(&ranges) {
            if let Err(reason) = content::check(&field.ext, &buf[start..end], ctx.validation) {
                return Ok(Err(leave_out(rel, reason)));
            }
        }
        return Ok(Ok(Loaded::Memory(ranges)));
    }
    for (field, rel) in sample
        .fields
        .iter()
        .zip(&rels)
        .filter(|(f, _)| content::is_checked(&f.ext, ctx.validation))
    {
        let reader = match ctx.source.open(rel) {
            Ok(reader) => reader,
            Err(ReadError::Unreadable(e)) => {
                return Ok(Err(leave_out(rel, format!("cannot be read: {e}"))));
            }
            Err(ReadError::Changed { read }) => return Err(changed(rel, field.size, read)),
        };
        match check_stream(&field.ext, reader) {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return Ok(Err(leave_out(rel, reason))),
            Err(e) => return Ok(Err(leave_out(rel, format!("cannot be read: {e}")))),
        }
    }
    let mut readers = Vec::with_capacity(sample.fields.len());
    for (field, rel) in sample.fields.iter().zip(&rels) {
        match ctx.source.open(rel) {
            Ok(inner) => readers.push(Tracked {
                inner,
                read: 0,
                failed: None,
            }),
            Err(ReadError::Unreadable(e)) => {
                return Ok(Err(leave_out(rel, format!("cannot be read: {e}"))));
            }
            Err(ReadError::Changed { read }) => return Err(changed(rel, field.size, read)),
        }
    }
    Ok(Ok(Loaded::Streams(readers)))
}

/// Streaming content check of a large field: JSON parsed from the stream, images
/// checked from their first and last bytes.
fn check_stream(ext: &str, mut reader: Box<dyn Read + Send>) -> io::Result<Result<(), String>> {
    if ext.rsplit('.').next() == Some("json") {
        return Ok(content::check_json_stream(reader));
    }
    let (mut head, mut tail) = (Vec::with_capacity(EDGE), Vec::with_capacity(2 * EDGE));
    let (mut zeros, mut total) = (0usize, 0u64);
    let mut block = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &block[..n];
        total += n as u64;
        let take = (EDGE - head.len()).min(n);
        head.extend_from_slice(&chunk[..take]);
        tail.extend_from_slice(&chunk[n.saturating_sub(EDGE)..]);
        tail.drain(..tail.len().saturating_sub(EDGE));
        let trailing = chunk.iter().rev().take_while(|&&b| b == 0).count();
        zeros = if trailing == n { zeros + n } else { trailing };
    }
    Ok(content::check_edges(ext, &head, &tail, total, zeros))
}
