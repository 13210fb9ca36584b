//! The stage driver: reads the source's manifest (or lists it), stages the files
//! `concurrency` at once, and writes the manifest last when every file matched.

use std::io::Read;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use shardsmith_manifest::unfinished::{self, Unfinished};
use shardsmith_manifest::{
    DEFAULT_CHUNK_SIZE, FileEntry, MANIFEST_FILE, Manifest, ManifestKind, SUMS_FILE, TEMP_PREFIX,
};

use super::chunked::ChunkPool;
use super::copy::{Ctx, Staged, read_failed, stage_one};
use super::options::{Mismatch, StageOptions, StageReport};
use crate::{Error, InputListing, InputSource, ListedFile, OutputSink, ReadError, Result};

/// The unfinished run whose state `src` holds (sources list no state, so it is read by
/// name: its `run.json` and its lease).
fn unfinished_source(src: &dyn InputSource) -> Result<Option<Unfinished>> {
    let read = |rel: &str| -> Result<Option<Vec<u8>>> {
        match src.open(rel) {
            Ok(reader) => {
                let mut bytes = Vec::new();
                reader
                    .take(1 << 20)
                    .read_to_end(&mut bytes)
                    .map_err(|e| Error::io("reading", src.display(rel), e))?;
                Ok(Some(bytes))
            }
            Err(ReadError::Vanished) => Ok(None),
            Err(e) => Err(read_failed(src, rel, e)),
        }
    };
    let run = read(unfinished::RUN_FILE)?;
    let leased = read(unfinished::LEASE_FILE)?.is_some();
    Ok(Unfinished::from_state(None, run.as_deref(), leased))
}

/// Copies `src` to `dst` (see the module). `existing` reads what is already at the
/// destination, to keep files a previous run staged. `progress` gets bytes as they
/// arrive.
pub fn stage(
    src: &dyn InputSource,
    dst: &dyn OutputSink,
    existing: &dyn InputSource,
    options: &StageOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<StageReport> {
    let listing = src.list()?;
    let mut report = StageReport::default();
    // The manifest is not in the listing (sources leave their own metadata out).
    let manifest_bytes = read_manifest(src)?;
    if manifest_bytes.is_none() {
        refuse_without_manifest(src, options, &listing)?;
    }
    let mut chunk_size = DEFAULT_CHUNK_SIZE;
    let expected: Vec<FileEntry> = match &manifest_bytes {
        Some(bytes) => {
            let (manifest, _) = Manifest::parse(bytes, Path::new(&src.display(MANIFEST_FILE)))?;
            report.had_manifest = true;
            chunk_size = manifest.chunk_size;
            manifest.files
        }
        None => listing
            .files
            .iter()
            .filter(|f| f.rel != SUMS_FILE && !f.rel.starts_with(TEMP_PREFIX))
            .map(unrecorded_entry)
            .collect(),
    };
    report.files = expected.len();
    report.bytes = expected.iter().map(|e| e.size).sum();
    let listed: std::collections::HashMap<&str, u64> = listing
        .files
        .iter()
        .map(|f| (f.rel.as_str(), f.size))
        .collect();
    let pool = ChunkPool::new(options.chunk_memory);
    let ctx = Ctx {
        src,
        dst,
        existing,
        options,
        listed: &listed,
        chunk_size,
        pool: &pool,
        progress,
    };
    let mut tally = stage_all(&ctx, &expected)?;
    tally.mismatches.sort_by(|a, b| a.path.cmp(&b.path));
    report.kept = tally.kept;
    report.copied = tally.copied;
    report.bytes_copied = tally.bytes_copied;
    report.chunked = tally.chunked;
    report.chunk_size = tally.chunk_size;
    report.mismatches = tally.mismatches;
    if !report.mismatches.is_empty() {
        return Ok(report);
    }
    // Every file arrived as expected: the manifest last, as the dataset's commit marker.
    let entries: Vec<FileEntry> = tally
        .entries
        .into_iter()
        .map(|e| e.expect("staged"))
        .collect();
    report.root_sha256 = commit_manifest(dst, manifest_bytes, entries)?;
    report.complete = true;
    Ok(report)
}

/// The source's manifest, if it has one.
fn read_manifest(src: &dyn InputSource) -> Result<Option<Vec<u8>>> {
    match src.open(MANIFEST_FILE) {
        Ok(mut reader) => {
            let mut bytes = Vec::new();
            reader
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io("reading", src.display(MANIFEST_FILE), e))?;
            Ok(Some(bytes))
        }
        Err(ReadError::Vanished) => Ok(None),
        Err(e) => Err(read_failed(src, MANIFEST_FILE, e)),
    }
}

/// Without a manifest, a source that holds an unfinished run (unless accepted) or no
/// files at all is refused.
fn refuse_without_manifest(
    src: &dyn InputSource,
    options: &StageOptions,
    listing: &InputListing,
) -> Result<()> {
    if !options.accept_unfinished
        && let Some(run) = unfinished_source(src)?
    {
        return Err(Error::Unfinished {
            location: src.describe(),
            what: run.describe(),
            advice: format!(
                "a copy of it would pass for the whole dataset; {}, then stage it; or add --accept-unfinished to copy the files as they are",
                run.how_to_finish()
            ),
        });
    }
    if listing.files.is_empty() {
        return Err(Error::Empty {
            location: src.describe(),
            advice:
                "nothing to stage; check the bucket, the prefix and the credentials' view of them"
                    .into(),
        });
    }
    Ok(())
}

/// The entry of a listed file no manifest records: its size, no digest yet.
fn unrecorded_entry(f: &ListedFile) -> FileEntry {
    FileEntry {
        path: f.rel.clone(),
        size: f.size,
        sha256: String::new(),
        chunk_crc32: String::new(),
        chunks: None,
        format: None,
        samples: None,
        first_key: None,
        last_key: None,
        documents: None,
        tokens: None,
        tensors: Vec::new(),
    }
}

/// Stages every expected file, `options.concurrency` at once; the first error stops
/// the others from starting.
fn stage_all(ctx: &Ctx<'_>, expected: &[FileEntry]) -> Result<Tally> {
    let next = AtomicUsize::new(0);
    let outcome = Mutex::new(Tally {
        entries: vec![None; expected.len()],
        ..Tally::default()
    });
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..ctx.options.concurrency.clamp(1, expected.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= expected.len() || first_error.lock().expect("no panic").is_some() {
                        return;
                    }
                    let done = stage_one(ctx, &expected[i]);
                    let mut out = outcome.lock().expect("no panic");
                    match done {
                        Ok(Staged::Kept(e)) => {
                            out.entries[i] = Some(e);
                            out.kept += 1;
                        }
                        Ok(Staged::Copied(e, by_chunks)) => {
                            out.bytes_copied += e.size;
                            out.entries[i] = Some(e);
                            out.copied += 1;
                            if let Some(chunk) = by_chunks {
                                out.chunked += 1;
                                out.chunk_size = out.chunk_size.max(chunk);
                            }
                        }
                        Ok(Staged::Bad(m)) => out.mismatches.push(m),
                        Err(e) => {
                            first_error.lock().expect("no panic").get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().expect("no panic") {
        return Err(e);
    }
    Ok(outcome.into_inner().expect("no panic"))
}

/// Writes `SHA256SUMS` and, last, the manifest: the source's own, or one made from the
/// staged entries. Returns the root digest.
fn commit_manifest(
    dst: &dyn OutputSink,
    manifest_bytes: Option<Vec<u8>>,
    entries: Vec<FileEntry>,
) -> Result<String> {
    let (manifest_bytes, root) = match manifest_bytes {
        Some(bytes) => {
            let (manifest, _) = Manifest::parse(&bytes, Path::new(MANIFEST_FILE))?;
            (bytes, manifest.root_sha256)
        }
        None => {
            let mut manifest = Manifest::new(ManifestKind::Directory, DEFAULT_CHUNK_SIZE, entries);
            manifest.recount();
            manifest.seal();
            (manifest.to_json_bytes(), manifest.root_sha256.clone())
        }
    };
    let (manifest, _) = Manifest::parse(&manifest_bytes, Path::new(MANIFEST_FILE))?;
    shardsmith_manifest::commit(&manifest.files, &manifest_bytes, |name, bytes| {
        dst.write_atomic(name, bytes)
    })?;
    Ok(root)
}

/// What the files' stages add up to.
#[derive(Default)]
struct Tally {
    /// Per file, its entry once staged.
    entries: Vec<Option<FileEntry>>,
    mismatches: Vec<Mismatch>,
    kept: usize,
    copied: usize,
    bytes_copied: u64,
    /// Files copied by chunks, and the largest chunk size.
    chunked: usize,
    chunk_size: u64,
}
