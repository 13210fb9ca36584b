//! Copying a dataset from one location to another, verified on arrival (`shardsmith
//! stage`): every file is hashed while it is copied and compared with the source's
//! manifest, with no second read. A file becomes visible under its name only when its
//! SHA-256 matches; the manifest is written last and only when every file matched, so a
//! staged dataset never looks complete when it is not. Files already at the destination
//! with the right digest (or size, when trusted) are kept: a re-run resumes.

use std::io::Read;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use shardsmith_manifest::unfinished::{self, Unfinished};
use shardsmith_manifest::{
    DEFAULT_CHUNK_SIZE, Digester, FileDigest, FileEntry, MANIFEST_FILE, Manifest, ManifestKind,
    SUMS_FILE, TEMP_PREFIX,
};

use crate::{
    Error, InputListing, InputSource, ListedFile, OutputSink, ReadError, Result, ShardFile,
};

/// How `stage` runs.
#[derive(Clone, Debug)]
pub struct StageOptions {
    /// Keep a destination file whose size matches without hashing it again.
    pub trust_existing: bool,
    /// Files copied at once.
    pub concurrency: usize,
    /// Copy a source that holds an unfinished run's state and no manifest (else refused),
    /// writing a manifest of the files as they are.
    pub accept_unfinished: bool,
}

/// A file that did not arrive as the manifest says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Path relative to the dataset.
    pub path: String,
    /// What differs, in words.
    pub reason: String,
    /// The first byte range whose chunk CRC differs, when the manifest's chunk CRCs
    /// narrow it.
    pub range: Option<(u64, u64)>,
}

/// What a stage did.
#[derive(Clone, Debug, Default)]
pub struct StageReport {
    /// True when the source had a manifest (else one was written for what was copied).
    pub had_manifest: bool,
    /// Files the dataset has (as the manifest lists them, or as listed).
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files copied by this run.
    pub copied: usize,
    /// Bytes copied by this run.
    pub bytes_copied: u64,
    /// Files already at the destination, kept.
    pub kept: usize,
    /// Files that did not match; none were left at the destination.
    pub mismatches: Vec<Mismatch>,
    /// True when the destination's manifest was written (every file matched).
    pub complete: bool,
    /// The root digest of the destination's manifest.
    pub root_sha256: String,
}

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

fn read_failed(src: &dyn InputSource, rel: &str, e: ReadError) -> Error {
    Error::Io {
        op: "reading",
        path: src.display(rel).into(),
        source: e.into(),
    }
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
    let ctx = Ctx {
        src,
        dst,
        existing,
        options,
        listed: &listed,
        chunk_size,
        progress,
    };
    let (entries, mut mismatches, kept, copied, bytes_copied) = stage_all(&ctx, &expected)?;
    mismatches.sort_by(|a, b| a.path.cmp(&b.path));
    report.kept = kept;
    report.copied = copied;
    report.bytes_copied = bytes_copied;
    report.mismatches = mismatches;
    if !report.mismatches.is_empty() {
        return Ok(report);
    }
    // Every file arrived as expected: the manifest last, as the dataset's commit marker.
    let entries: Vec<FileEntry> = entries.into_iter().map(|e| e.expect("staged")).collect();
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
    let outcome: Mutex<Tally> = Mutex::new((vec![None; expected.len()], Vec::new(), 0, 0, 0));
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
                            out.0[i] = Some(e);
                            out.2 += 1;
                        }
                        Ok(Staged::Copied(e)) => {
                            out.4 += e.size;
                            out.0[i] = Some(e);
                            out.3 += 1;
                        }
                        Ok(Staged::Bad(m)) => out.1.push(m),
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

/// Per file, its entry once staged; the mismatches; files kept, copied; bytes copied.
type Tally = (Vec<Option<FileEntry>>, Vec<Mismatch>, usize, usize, u64);

/// What every file's copy shares.
struct Ctx<'a> {
    src: &'a dyn InputSource,
    dst: &'a dyn OutputSink,
    existing: &'a dyn InputSource,
    options: &'a StageOptions,
    listed: &'a std::collections::HashMap<&'a str, u64>,
    chunk_size: u64,
    progress: &'a (dyn Fn(u64) + Sync),
}

enum Staged {
    Kept(FileEntry),
    Copied(FileEntry),
    Bad(Mismatch),
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

/// Whether the destination already holds `entry` (same size, and same SHA-256 unless
/// existing files are trusted).
fn already_staged(ctx: &Ctx<'_>, entry: &FileEntry) -> Result<bool> {
    let path = entry.path.as_str();
    if ctx.dst.size(path)? != Some(entry.size) {
        return Ok(false);
    }
    if ctx.options.trust_existing {
        return Ok(true);
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

fn stage_one(ctx: &Ctx<'_>, entry: &FileEntry) -> Result<Staged> {
    let Ctx {
        src,
        dst,
        listed,
        progress,
        ..
    } = *ctx;
    let path = entry.path.as_str();
    let known = !entry.sha256.is_empty();
    let bad = |reason: String, range| {
        Ok(Staged::Bad(Mismatch {
            path: path.to_string(),
            reason,
            range,
        }))
    };
    // A file the listing leaves out (a merged dataset's part manifests, which sources
    // skip as their own metadata) is opened all the same; absent, it is missing.
    match listed.get(path) {
        None => {}
        Some(&size) if known && size != entry.size => {
            return bad(
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
    let mut reader = match src.open(path) {
        Ok(reader) => reader,
        Err(ReadError::Vanished) => return bad("missing at the source".into(), None),
        Err(e) => return Err(read_failed(src, path, e)),
    };
    let mut file = dst.create(path)?;
    let digest = copy(ctx, path, reader.as_mut(), file.as_mut())?;
    if known && digest.size != entry.size {
        drop(file);
        return bad(
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
    Ok(Staged::Copied(staged))
}
