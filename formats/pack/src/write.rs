//! Writing one planned shard: load each sample, check it, encode it, hash while writing.
//! Skips are decided per sample, before any of its bytes are written, so a shard never
//! holds part of a sample.

use std::io::{self, BufWriter};
use std::sync::{Arc, Mutex};

use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, ExpectedSize, FileEntry, HashingWriter, Skipped};

use super::ahead::{Feed, Helpers};
use super::dedup::{PlanDedup, PlanDigests, same_content};
use super::left_out::first_cause;
use super::load::WriteContext;
use super::state::ShardRecord;
use crate::{Error, Result};
use shardsmith_shard::SampleSpec;
use shardsmith_shard::digest::{HashingReader, memory_digest, sample_digest};
use shardsmith_shard::format::{Field, Payload, PlanBroken, ShardOut};
use shardsmith_shard::sample::{Loaded, Tracked};
use shardsmith_store::ShardFile;

/// A planned shard, written but not committed.
pub(crate) struct Written {
    /// Its record and uncommitted file; `None` when every sample planned for it was left
    /// out (nothing is kept on disk then).
    pub shard: Option<(ShardRecord, Box<dyn ShardFile>)>,
    /// Inputs left out while writing it.
    pub skipped: Vec<Skipped>,
    /// With `--dedup`: the digests of its samples, packed and left out as duplicates.
    pub digests: Option<PlanDigests>,
}

/// Writes `samples` under a temporary name made from `name`; returns the record and the
/// uncommitted file. The format first gets the plan (it may stream against it); if the
/// shard departs from the plan, it is written again without one. Idle workers among
/// `helpers` may read its samples ahead ([`crate::ahead`]).
pub(crate) fn write_shard<'a>(
    ctx: &WriteContext<'_>,
    name: &str,
    samples: &'a [SampleSpec],
    helpers: Option<&Helpers<'a>>,
    dedup: Option<&PlanDedup<'_>>,
) -> Result<Written> {
    match write_shard_with(ctx, name, samples, true, helpers, dedup) {
        Err(Error::Io { source, .. }) if PlanBroken::is(&source) => {
            write_shard_with(ctx, name, samples, false, helpers, dedup)
        }
        other => other,
    }
}

fn write_shard_with<'a>(
    ctx: &WriteContext<'_>,
    name: &str,
    samples: &'a [SampleSpec],
    planned: bool,
    helpers: Option<&Helpers<'a>>,
    dedup: Option<&PlanDedup<'_>>,
) -> Result<Written> {
    let file = ctx.sink.create(name)?;
    // The plan's payload says whether the shard may reach the chunk-list threshold.
    let planned_bytes = samples.iter().map(SampleSpec::payload).sum();
    let shared = Arc::new(Mutex::new(HashingWriter::expecting(
        BufWriter::with_capacity(1 << 20, file),
        DEFAULT_CHUNK_SIZE,
        ExpectedSize::About(planned_bytes),
    )));
    let mut out = ShardOut::new(shared.clone());
    let mut encoder = if planned {
        ctx.format.planned_encoder(samples)
    } else {
        ctx.format.encoder()
    };
    let mut reader = ctx.source.reader(samples, ctx.validation)?;
    let mut feed = Feed::new(ctx, helpers, samples);
    let mut buf = ReadBuffer::take();
    let mut skipped = Vec::new();
    let mut digests = dedup.map(|_| PlanDigests::default());
    let (mut count, mut first, mut last) = (0u64, None, None);
    // Named by where it goes (the output's path or URL), so that a full disk or a
    // refused upload says which file system or bucket.
    let shown = format!("{}/{name}", ctx.sink.describe());
    let write_err = |e: io::Error| Error::io("writing shard", &shown, e);
    for (index, sample) in samples.iter().enumerate() {
        let loaded = match feed.next(ctx, reader.as_mut(), index, sample, &mut buf)? {
            Ok(loaded) => loaded,
            Err(skips) => {
                if ctx.strict {
                    let first = first_cause(&skips).expect("a left-out sample has a file");
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
        if let (Some(dedup), Some(digests)) = (dedup, digests.as_mut())
            && is_duplicate(ctx, dedup, digests, index, sample, &loaded, &buf)?
        {
            ctx.observer.advanced(1, sample.payload());
            continue;
        }
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
                let mut hashing: Vec<HashingReader<'_>> = readers
                    .iter_mut()
                    .map(|r| HashingReader::new(r as &mut dyn io::Read))
                    .collect();
                let mut fields: Vec<Field<'_>> = sample
                    .fields
                    .iter()
                    .zip(hashing.iter_mut())
                    .map(|(f, r)| Field {
                        ext: &f.ext,
                        size: f.size,
                        payload: Payload::Stream(r),
                    })
                    .collect();
                let added = encoder.add(&mut out, &sample.key, &mut fields);
                drop(fields);
                if let (Ok(()), Some(dedup), Some(digests)) = (&added, dedup, digests.as_mut()) {
                    // Known only once written: a duplicate kept here is found by the
                    // committer, which has the shard written again without it.
                    let digest = sample_digest(
                        sample
                            .fields
                            .iter()
                            .zip(&hashing)
                            .map(|(f, h)| (&*f.ext, f.size, h.digest())),
                    );
                    dedup.seen.register(digest, dedup.start + index);
                    digests.kept.push((index, digest));
                }
                drop(hashing);
                if let Err(e) = added {
                    return Err(stream_error(ctx, e, sample, &readers, name));
                }
                for (field, reader) in sample.fields.iter().zip(readers.iter_mut()) {
                    let mut probe = [0u8; 1];
                    if io::Read::read(reader, &mut probe).unwrap_or(0) > 0 {
                        return Err(shardsmith_shard::Error::InputChanged {
                            path: ctx.source.field_path(sample, field),
                            listed: field.size,
                            read: field.size + 1,
                        }
                        .into());
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
    let facts = encoder.finish(&mut out).map_err(write_err)?;
    drop((encoder, out));
    let hashing = Arc::try_unwrap(shared)
        .map_err(|_| Error::Setting(format!("shard `{name}`: the encoder kept its output")))?
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (buffered, digest) = hashing.finish();
    let file = buffered
        .into_inner()
        .map_err(|e| write_err(e.into_error()))?;
    if count == 0 {
        // Dropping the uncommitted file removes it: no empty shard is ever kept.
        return Ok(Written {
            shard: None,
            skipped,
            digests,
        });
    }
    let mut entry = FileEntry::new(name, &digest);
    entry.format = Some(ctx.format.name().to_string());
    entry.samples = Some(count);
    entry.first_key = first;
    entry.last_key = last;
    Ok(Written {
        shard: Some((ShardRecord { entry, facts }, file)),
        skipped,
        digests,
    })
}

/// With `--dedup`, for a loaded sample: true when it is left out as a duplicate (the
/// committer's finding, or an earlier sample with the same bytes already registered);
/// otherwise a sample held in memory is registered and recorded as packed (a streamed
/// one is once written).
fn is_duplicate(
    ctx: &WriteContext<'_>,
    dedup: &PlanDedup<'_>,
    digests: &mut PlanDigests,
    index: usize,
    sample: &SampleSpec,
    loaded: &Loaded,
    buf: &[u8],
) -> Result<bool> {
    if let Some(&digest) = dedup.exclude.get(&index) {
        digests.dropped.push((index, digest));
        return Ok(true);
    }
    let Loaded::Memory(ranges) = loaded else {
        return Ok(false);
    };
    let values: Vec<&[u8]> = ranges
        .iter()
        .map(|&(start, end)| &buf[start..end])
        .collect();
    let digest = memory_digest(
        sample
            .fields
            .iter()
            .map(|f| &*f.ext)
            .zip(values.iter().copied()),
    );
    if let Some(first) = dedup.seen.register(digest, dedup.start + index)
        && same_content(ctx, &dedup.all[first], sample, Some(&values))?
    {
        digests.dropped.push((index, digest));
        return Ok(true);
    }
    digests.kept.push((index, digest));
    Ok(false)
}

thread_local! {
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The buffer samples are read into, kept by each worker thread from one shard to the
/// next: a fresh one per shard regrows through every size class, and allocators keep
/// those freed blocks (peak RSS grew with the number of shards).
struct ReadBuffer(Vec<u8>);

impl ReadBuffer {
    fn take() -> Self {
        Self(READ_BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut())))
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        buf.clear();
        READ_BUFFER.with(|b| *b.borrow_mut() = buf);
    }
}

impl std::ops::Deref for ReadBuffer {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl std::ops::DerefMut for ReadBuffer {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

/// A streamed copy failed: blame the input that failed or came up short, else the
/// shard. The shard is abandoned (its temporary file is removed) and the run stops.
fn stream_error(
    ctx: &WriteContext<'_>,
    e: io::Error,
    sample: &SampleSpec,
    readers: &[Tracked],
    shard: &str,
) -> Error {
    for (field, reader) in sample.fields.iter().zip(readers) {
        let path = ctx.source.field_path(sample, field);
        if let Some(failure) = &reader.failed {
            return Error::io("reading input", path, io::Error::other(failure.clone()));
        }
        if reader.read < field.size && e.kind() == io::ErrorKind::UnexpectedEof {
            return shardsmith_shard::Error::InputChanged {
                path,
                listed: field.size,
                read: reader.read,
            }
            .into();
        }
    }
    Error::io(
        "writing shard",
        format!("{}/{shard}", ctx.sink.describe()),
        e,
    )
}
