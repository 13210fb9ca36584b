//! model_signing's shard serialization, hashed on every core: each non-empty file cut
//! into shards of N bytes ([`Span::cut`]), each shard a unit of work that reads its own
//! byte range with positioned reads (`pread`) into a buffer of at most [`CHUNK`] bytes.
//! Every byte is read once, a file is opened once however many shards it has, and memory
//! stays at one buffer per thread whatever the file sizes.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::files::FileSet;
use crate::statement::{Resource, Span};
use crate::{Error, Result};

/// Bytes read at a time within a shard.
pub const CHUNK: usize = 1 << 20;

/// Most shards a signature made here may list: each is one resource of the statement
/// (about 150 bytes of JSON), held in memory and in the bundle. A 500 GB model in 1 GB
/// shards has 500, in 64 MiB shards about 7,500.
pub const MAX_SHARDS: u64 = 1_000_000;

/// The SHA-256 of each of `spans` of the file at `path` (in the order given), hashed in
/// parallel from one open file; `progress` counts the bytes read. A file shorter than a
/// span is an I/O error that says so.
pub fn hash_spans(
    path: &Path,
    spans: &[Span],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<[u8; 32]>> {
    if spans.is_empty() {
        return Ok(Vec::new());
    }
    let file = File::open(path).map_err(|e| Error::io("reading", path, e))?;
    spans
        .par_iter()
        .map(|span| hash_span(&file, *span, progress).map_err(|e| Error::io("reading", path, e)))
        .collect()
}

fn hash_span(file: &File, span: Span, progress: &(dyn Fn(u64) + Sync)) -> io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; usize::try_from(span.len()).unwrap_or(CHUNK).min(CHUNK)];
    let mut at = span.start;
    while at < span.end {
        let want = usize::try_from(span.end - at)
            .unwrap_or(CHUNK)
            .min(buf.len());
        match file.read_at(&mut buf[..want], at) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the file ends at byte {at}, inside the shard at bytes {span}: it changed while it was read"
                    ),
                ));
            }
            Ok(n) => {
                hasher.update(&buf[..n]);
                at += n as u64;
                progress(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hasher.finalize().into())
}

/// Every file's shards and their sizes, as signing cuts them: a name with `:` cannot be
/// a shard resource's path (model_signing splits `path:start:end` at every `:`), and
/// more than [`MAX_SHARDS`] shards in all are refused.
pub fn plan(set: &FileSet, shard_size: u64) -> Result<Vec<(u64, Vec<Span>)>> {
    let mut total = 0u64;
    let mut planned = Vec::with_capacity(set.files.len());
    for (name, full) in &set.files {
        if name.contains(':') {
            return Err(Error::NotAFile {
                path: name.clone(),
                reason: "its name holds `:`, which a shard's name (`path:start:end`) cannot carry: model_signing would not read it back; sign without --shard-size".into(),
            });
        }
        let size = std::fs::metadata(full)
            .map_err(|e| Error::io("reading", full, e))?
            .len();
        total += size.div_ceil(shard_size);
        if total > MAX_SHARDS {
            return Err(Error::TooManyShards {
                shard_size,
                max: MAX_SHARDS,
            });
        }
        planned.push((size, Span::cut(size, shard_size).collect()));
    }
    Ok(planned)
}

/// The resources of a shards signature over `set`: every shard of every file, hashed in
/// parallel (files and the shards within each file alike); `progress_total` gets the
/// bytes to read before any is read.
pub fn digests(
    set: &FileSet,
    shard_size: u64,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<Resource>> {
    let planned = plan(set, shard_size)?;
    progress_total(planned.iter().map(|(size, _)| size).sum());
    let hashed: Vec<Vec<Resource>> = set
        .files
        .par_iter()
        .zip(&planned)
        .map(|((name, full), (_, spans))| {
            let digests = hash_spans(full, spans, progress)?;
            Ok(spans
                .iter()
                .zip(digests)
                .map(|(span, digest)| Resource::shard(name.clone(), *span, digest))
                .collect())
        })
        .collect::<Result<_>>()?;
    Ok(hashed.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shard_is_the_sha256_of_its_bytes_and_a_short_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        let data: Vec<u8> = (0..(3 * CHUNK + 17)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let size = data.len() as u64;
        let n = CHUNK as u64 + 5;
        let spans: Vec<Span> = Span::cut(size, n).collect();
        let read = std::sync::atomic::AtomicU64::new(0);
        let got = hash_spans(&path, &spans, &|b| {
            read.fetch_add(b, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(read.into_inner(), size, "every byte read once");
        for (span, digest) in spans.iter().zip(&got) {
            let want: [u8; 32] =
                Sha256::digest(&data[span.start as usize..span.end as usize]).into();
            assert_eq!(*digest, want, "{span}");
        }
        let beyond = [Span {
            start: size - 1,
            end: size + 9,
        }];
        let err = hash_spans(&path, &beyond, &|_| {}).unwrap_err().to_string();
        assert!(
            err.contains(&format!("the file ends at byte {size}")),
            "{err}"
        );
    }

    #[test]
    fn names_with_a_colon_and_too_many_shards_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a:b"), "x").unwrap();
        std::fs::write(dir.path().join("big"), vec![0u8; 4096]).unwrap();
        let set = crate::files::collect(dir.path(), &[], false).unwrap();
        let err = plan(&set, 1000).unwrap_err().to_string();
        assert!(
            err.starts_with("`a:b` cannot be signed: its name holds `:`"),
            "{err}"
        );
        std::fs::remove_file(dir.path().join("a:b")).unwrap();
        let set = crate::files::collect(dir.path(), &[], false).unwrap();
        assert_eq!(plan(&set, 1000).unwrap()[0].1.len(), 5);
        std::fs::write(dir.path().join("big"), vec![0u8; MAX_SHARDS as usize + 1]).unwrap();
        let err = plan(&set, 1).unwrap_err().to_string();
        assert!(
            err.contains("more than 1000000 shards of 1 byte(s)"),
            "{err}"
        );
    }
}
