//! A manifest of every file an [`InputSource`] lists (`shardsmith manifest` of an object
//! store prefix): each file read once, several at a time, hashed as it streams.

use std::io::Read;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, Digester, FileEntry, Manifest, ManifestKind};

use crate::{Error, InputSource, Result};

/// The directory manifest of `src` (sealed), reading `concurrency` files at once;
/// `progress_total` gets the bytes to read, `progress` each block.
pub fn manifest_of(
    src: &dyn InputSource,
    concurrency: usize,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Manifest> {
    let listing = src.list()?;
    progress_total(listing.files.iter().map(|f| f.size).sum());
    let next = AtomicUsize::new(0);
    let entries: Mutex<Vec<(usize, Result<FileEntry>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..concurrency.clamp(1, listing.files.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = listing.files.get(i) else {
                        return;
                    };
                    let entry = digest(src, &file.rel, file.size, progress);
                    entries.lock().expect("no panic").push((i, entry));
                }
            });
        }
    });
    let mut entries = entries.into_inner().expect("no panic");
    entries.sort_by_key(|(i, _)| *i);
    let files = entries
        .into_iter()
        .map(|(_, e)| e)
        .collect::<Result<Vec<_>>>()?;
    let mut manifest = Manifest::new(ManifestKind::Directory, DEFAULT_CHUNK_SIZE, files);
    manifest.skipped = listing.skipped;
    manifest.recount();
    manifest.seal();
    Ok(manifest)
}

fn digest(
    src: &dyn InputSource,
    rel: &str,
    size: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<FileEntry> {
    let failed = |e: std::io::Error| Error::io("reading", src.display(rel), e);
    let reader = src.open(rel).map_err(|e| failed(e.into()))?;
    let digest = digest_stream(reader, DEFAULT_CHUNK_SIZE, Some(size), progress).map_err(failed)?;
    if digest.size != size {
        return Err(failed(std::io::Error::other(format!(
            "{} bytes read, {size} listed: it changed while being hashed",
            digest.size
        ))));
    }
    Ok(FileEntry::new(rel.to_string(), &digest))
}

/// The digest of everything `reader` yields, `progress` told of every block; with the
/// chunk SHA-256s when `listed` (the size the listing gave) reaches the chunk-list
/// threshold.
pub(crate) fn digest_stream(
    mut reader: Box<dyn Read + Send>,
    chunk_size: u64,
    listed: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
) -> std::io::Result<shardsmith_manifest::FileDigest> {
    let mut digester = match listed {
        Some(size) => {
            Digester::expecting(chunk_size, shardsmith_manifest::ExpectedSize::AtMost(size))
        }
        None => Digester::new(chunk_size),
    };
    let mut block = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut block) {
            Ok(0) => return Ok(digester.finish()),
            Ok(n) => {
                digester.update(&block[..n]);
                progress(n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
