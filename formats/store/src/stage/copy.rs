//! Staging one file: kept when the destination already holds it, else copied and
//! checked, by its chunks when its manifest entry lists usable chunk digests
//! ([`super::chunked`]), else streamed and hashed whole.

use std::collections::HashMap;
use std::io::Read;

use shardsmith_manifest::verify::usable_chunks;
use shardsmith_manifest::{ChunkDigests, Digester, FileDigest, FileEntry};

use super::chunked::{ChunkPool, Chunked, Fetched, fetch_chunks};
use super::options::{Mismatch, StageOptions};
use crate::{Error, InputSource, OutputSink, ReadError, Result, ShardFile};

/// What every file's copy shares.
pub(super) struct Ctx<'a> {
    pub(super) src: &'a dyn InputSource,
    pub(super) dst: &'a dyn OutputSink,
    pub(super) existing: &'a dyn InputSource,
    pub(super) options: &'a StageOptions,
    /// The listed size of each source file.
    pub(super) listed: &'a HashMap<&'a str, u64>,
    /// The manifest's CRC chunk size.
    pub(super) chunk_size: u64,
    /// The chunk buffers of the files copied by chunks.
    pub(super) pool: &'a ChunkPool,
    pub(super) progress: &'a (dyn Fn(u64) + Sync),
}

/// What became of one file.
pub(super) enum Staged {
    Kept(FileEntry),
    /// Copied and checked; by chunks of this size when `Some`.
    Copied(FileEntry, Option<u64>),
    Bad(Mismatch),
}

pub(super) fn read_failed(src: &dyn InputSource, rel: &str, e: ReadError) -> Error {
    Error::Io {
        op: "reading",
        path: src.display(rel).into(),
        source: e.into(),
    }
}

/// The first chunk whose CRC differs, as a byte range.
fn first_bad_chunk(entry: &FileEntry, got: &FileDigest) -> Option<(u64, u64)> {
    let chunk = got.chunk_size;
    let got = got.chunks_hex();
    let index = entry
        .chunk_crc32
        .as_bytes()
        .chunks(8)
        .zip(got.as_bytes().chunks(8))
        .position(|(a, b)| a != b)?;
    let start = index as u64 * chunk;
    Some((start, (start + chunk).min(entry.size)))
}

/// The entry's chunk list, when the file is copied (or re-checked) from `from` by it:
/// an object store's ranged GETs, or any source when the options ask.
fn chunk_list<'e>(
    ctx: &Ctx<'_>,
    from: &dyn crate::InputSource,
    entry: &'e FileEntry,
) -> Option<&'e ChunkDigests> {
    if !(from.fetches_ahead() || ctx.options.chunks_from_files) {
        return None;
    }
    usable_chunks(entry, entry.size, ctx.chunk_size)
}

/// The fetch of `entry`'s chunks from `reader`.
fn chunked_job<'a>(
    ctx: &'a Ctx<'_>,
    reader: &'a dyn crate::RangeRead,
    display: String,
    list: &'a ChunkDigests,
    entry: &FileEntry,
    progress: &'a (dyn Fn(u64) + Sync),
) -> Chunked<'a> {
    let chunk = list.chunk_size().unwrap_or(entry.size.max(1));
    Chunked {
        reader,
        display,
        list,
        size: entry.size,
        fetchers: ctx.options.concurrency.clamp(1, ctx.pool.slots(chunk)),
        pool: ctx.pool,
        progress,
    }
}

/// Whether the destination already holds `entry` (same size, and same SHA-256 unless
/// existing files are trusted; by its chunks, in parallel, when it lists them).
fn already_staged(ctx: &Ctx<'_>, entry: &FileEntry) -> Result<bool> {
    let path = entry.path.as_str();
    if ctx.dst.size(path)? != Some(entry.size) {
        return Ok(false);
    }
    if ctx.options.trust_existing {
        return Ok(true);
    }
    if let Some(list) = chunk_list(ctx, ctx.existing, entry) {
        let Ok(reader) = ctx.existing.open_ranged(path) else {
            return Ok(false);
        };
        if reader.len() != entry.size {
            return Ok(false);
        }
        let job = chunked_job(
            ctx,
            reader.as_ref(),
            ctx.existing.display(path),
            list,
            entry,
            &|_| {},
        );
        let checked = fetch_chunks(&job, &mut |_| Ok(()));
        return Ok(matches!(checked, Ok(Fetched::Matched { .. })));
    }
    Ok(ctx.existing.open(path).is_ok_and(|reader| {
        crate::listed_manifest::digest_stream(reader, ctx.chunk_size, None, &|_| {})
            .is_ok_and(|digest| digest.sha256_hex() == entry.sha256)
    }))
}

/// Copies `reader` into `file`, hashing on the way; the digest of what arrived.
fn copy(
    ctx: &Ctx<'_>,
    path: &str,
    reader: &mut (dyn Read + Send),
    file: &mut dyn ShardFile,
) -> Result<FileDigest> {
    let mut digester = Digester::new(ctx.chunk_size);
    let mut block = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("reading", ctx.src.display(path), e)),
        };
        digester.update(&block[..n]);
        file.write_all(&block[..n])
            .map_err(|e| Error::io("writing", ctx.dst.describe() + "/" + path, e))?;
        (ctx.progress)(n as u64);
    }
    Ok(digester.finish())
}

/// A mismatch of `path`.
fn bad(path: &str, reason: String, range: Option<(u64, u64)>) -> Result<Staged> {
    Ok(Staged::Bad(Mismatch {
        path: path.to_string(),
        reason,
        range,
    }))
}

pub(super) fn stage_one(ctx: &Ctx<'_>, entry: &FileEntry) -> Result<Staged> {
    let Ctx {
        src,
        dst,
        listed,
        progress,
        ..
    } = *ctx;
    let path = entry.path.as_str();
    let known = !entry.sha256.is_empty();
    // A file the listing leaves out (a merged dataset's part manifests, which sources
    // skip as their own metadata) is opened all the same; absent, it is missing.
    match listed.get(path) {
        None => {}
        Some(&size) if known && size != entry.size => {
            return bad(
                path,
                format!(
                    "{size} bytes at the source, the manifest says {}",
                    entry.size
                ),
                None,
            );
        }
        Some(_) => {}
    }
    // Already staged by an earlier run?
    if known && already_staged(ctx, entry)? {
        progress(entry.size);
        return Ok(Staged::Kept(entry.clone()));
    }
    if known && let Some(list) = chunk_list(ctx, src, entry) {
        return stage_chunked(ctx, entry, list);
    }
    let mut reader = match src.open(path) {
        Ok(reader) => reader,
        Err(ReadError::Vanished) => return bad(path, "missing at the source".into(), None),
        Err(e) => return Err(read_failed(src, path, e)),
    };
    let mut file = dst.create(path)?;
    let digest = copy(ctx, path, reader.as_mut(), file.as_mut())?;
    if known && digest.size != entry.size {
        drop(file);
        return bad(
            path,
            format!(
                "{} bytes arrived, the manifest says {}",
                digest.size, entry.size
            ),
            None,
        );
    }
    if known && digest.sha256_hex() != entry.sha256 {
        drop(file);
        return bad(
            path,
            format!(
                "SHA-256 {} differs from the manifest's {}",
                digest.sha256_hex(),
                entry.sha256
            ),
            first_bad_chunk(entry, &digest),
        );
    }
    file.commit()?;
    let mut staged = entry.clone();
    if !known {
        staged = FileEntry::new(path.to_string(), &digest);
    }
    Ok(Staged::Copied(staged, None))
}

/// Copies `entry` by the chunks of `list`, each checked as it arrives; the whole-file
/// SHA-256 is not computed when every chunk matches (the list and the whole digest come
/// from the same manifest). The copy is dropped at the first chunk that differs twice.
fn stage_chunked(ctx: &Ctx<'_>, entry: &FileEntry, list: &ChunkDigests) -> Result<Staged> {
    let path = entry.path.as_str();
    let reader = match ctx.src.open_ranged(path) {
        Ok(reader) => reader,
        Err(ReadError::Vanished) => return bad(path, "missing at the source".into(), None),
        Err(e) => return Err(read_failed(ctx.src, path, e)),
    };
    if reader.len() != entry.size {
        return bad(
            path,
            format!(
                "{} bytes at the source, the manifest says {}",
                reader.len(),
                entry.size
            ),
            None,
        );
    }
    let mut file = ctx.dst.create(path)?;
    let job = chunked_job(
        ctx,
        reader.as_ref(),
        ctx.src.display(path),
        list,
        entry,
        ctx.progress,
    );
    let shown = ctx.dst.describe() + "/" + path;
    let fetched = fetch_chunks(&job, &mut |bytes| {
        file.write_all(bytes)
            .map_err(|e| Error::io("writing", shown.as_str(), e))
    })?;
    let chunk = list.chunk_size().unwrap_or(entry.size);
    match fetched {
        Fetched::Matched { .. } => {
            file.commit()?;
            Ok(Staged::Copied(entry.clone(), Some(chunk)))
        }
        Fetched::Bad(b) => {
            drop(file);
            bad(
                path,
                format!(
                    "chunk {} of {} (bytes {}..{}) differs from the manifest's chunk list on two reads (SHA-256 {}, the list says {}); the rest of the file was not fetched",
                    b.index,
                    list.sha256.len(),
                    b.range.start,
                    b.range.end,
                    b.actual,
                    b.expected
                ),
                Some((b.range.start, b.range.end)),
            )
        }
        Fetched::Ended(range) => {
            drop(file);
            bad(
                path,
                format!(
                    "the source ended within bytes {}..{}, the manifest says {} bytes (it changed while it was read)",
                    range.start, range.end, entry.size
                ),
                None,
            )
        }
    }
}
