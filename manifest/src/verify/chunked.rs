//! Verifying a file whose manifest entry lists chunk SHA-256s: every chunk is read with
//! positioned reads and hashed on its own core, its CRCs taken in the same read, so one
//! large file no longer verifies on one core. The whole-file SHA-256 is not computed:
//! when every chunk matches, the file is the one the manifest describes (the chunk list
//! and the whole digest come from the same manifest, which the root digest or a
//! signature pins). A file that also has a format inspector is read in order once more,
//! on a thread of its own, for the inspector (from the page cache, as the chunks read it).

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

use crate::scan::READ_BLOCK;
use crate::{
    ChunkDigests, FileContext, FileDigest, FileEntry, Inspection, Inspector, InspectorFactory,
};

/// Block size of the positioned reads.
const BLOCK: usize = 1 << 20;

/// A chunk whose SHA-256 differs from the manifest's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BadChunk {
    /// Its index in the list.
    pub(crate) index: usize,
    /// Its bytes.
    pub(crate) range: Range<u64>,
    /// The manifest's digest and the one read.
    pub(crate) expected: String,
    pub(crate) actual: String,
}

/// What reading a file by its chunks found.
pub(crate) struct ChunkedRead {
    /// Size and chunk CRCs as read; the SHA-256 is the manifest's when every chunk
    /// matched (it is not computed), zero otherwise.
    pub(crate) digest: FileDigest,
    /// Every chunk that differs, in order.
    pub(crate) bad: Vec<BadChunk>,
    /// The inspector's, when the file has one.
    pub(crate) inspection: Option<Inspection>,
}

/// The entry's chunk list when the file can be checked by it: the list is of a kind this
/// version checks and fits the recorded size, the file has that size (`present` bytes),
/// and each chunk is a whole number of `crc_chunk` CRC chunks (so the CRCs taken per
/// chunk join into the file's). `verify` and `stage` both decide by it.
pub fn usable_chunks(entry: &FileEntry, present: u64, crc_chunk: u64) -> Option<&ChunkDigests> {
    let list = entry.chunks.as_ref()?;
    let size = list.chunk_size()?;
    (present == entry.size && list.fits(entry.size) && size.is_multiple_of(crc_chunk))
        .then_some(list)
}

/// Reads `path` (of `size` bytes, as `list` was taken over) chunk by chunk on every
/// core; `progress` gets every block read.
pub(crate) fn read_chunked(
    path: &Path,
    ctx: &FileContext<'_>,
    list: &ChunkDigests,
    crc_chunk: u64,
    inspectors: &dyn InspectorFactory,
    progress: &(dyn Fn(u64) + Sync),
) -> io::Result<ChunkedRead> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let chunk = list.chunk_size().unwrap_or(size.max(1));
    let mut head = vec![0u8; READ_BLOCK.min(usize::try_from(size).unwrap_or(usize::MAX))];
    read_exact_at(&file, &mut head, 0)?;
    let inspector = inspectors.inspector_for(ctx, &head);
    let count = list.sha256.len();
    let (chunks, inspection) = std::thread::scope(|scope| {
        let inspecting = inspector.map(|inspector| scope.spawn(|| inspect(path, inspector)));
        let chunks: Vec<io::Result<([u8; 32], Vec<u32>)>> = (0..count)
            .into_par_iter()
            .map(|i| {
                hash_range(
                    &file,
                    ChunkDigests::range(chunk, i, size),
                    crc_chunk,
                    progress,
                )
            })
            .collect();
        let inspection = inspecting.map(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the inspector panicked")))
        });
        (chunks, inspection)
    });
    let mut crcs = Vec::new();
    let mut bad = Vec::new();
    for (index, result) in chunks.into_iter().enumerate() {
        let (sha, chunk_crcs) = result?;
        crcs.extend(chunk_crcs);
        let actual = crate::hex(&sha);
        if !actual.eq_ignore_ascii_case(&list.sha256[index]) {
            bad.push(BadChunk {
                index,
                range: ChunkDigests::range(chunk, index, size),
                expected: list.sha256[index].clone(),
                actual,
            });
        }
    }
    let sha256 = match bad.is_empty() {
        true => ctx
            .entry
            .and_then(|e| crate::parse_sha256(&e.sha256))
            .unwrap_or([0; 32]),
        false => [0; 32],
    };
    Ok(ChunkedRead {
        digest: FileDigest {
            size,
            sha256,
            chunk_size: crc_chunk,
            chunk_crc32: crcs,
            sharded: None,
        },
        bad,
        inspection: inspection.transpose()?,
    })
}

/// SHA-256 of `range` of `file` and the CRC-32 of each `crc_chunk` piece of it.
pub(super) fn hash_range(
    file: &File,
    range: Range<u64>,
    crc_chunk: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> io::Result<([u8; 32], Vec<u32>)> {
    let mut sha = Sha256::new();
    let mut crcs = Vec::new();
    let mut crc = crc32fast::Hasher::new();
    let mut in_crc = 0u64;
    let mut buf = vec![0u8; BLOCK];
    let mut at = range.start;
    while at < range.end {
        let want = usize::try_from(range.end - at).map_or(BLOCK, |n| n.min(BLOCK));
        let block = &mut buf[..want];
        read_exact_at(file, block, at)?;
        sha.update(&*block);
        let mut data = &block[..];
        while !data.is_empty() {
            let take = data
                .len()
                .min(usize::try_from(crc_chunk - in_crc).unwrap_or(usize::MAX));
            crc.update(&data[..take]);
            in_crc += take as u64;
            data = &data[take..];
            if in_crc == crc_chunk {
                crcs.push(std::mem::replace(&mut crc, crc32fast::Hasher::new()).finalize());
                in_crc = 0;
            }
        }
        at += want as u64;
        progress(want as u64);
    }
    if in_crc > 0 {
        crcs.push(crc.finalize());
    }
    Ok((sha.finalize().into(), crcs))
}

/// Fills `buf` from `offset`; a file that ends early changed while it was read.
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the file ended at byte {offset} while it was read (it changed)"),
                ));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Feeds the whole file, in order, to `inspector`.
fn inspect(path: &Path, mut inspector: Box<dyn Inspector>) -> io::Result<Inspection> {
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; BLOCK];
    loop {
        let n = match io::Read::read(&mut file, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        inspector.update(&buf[..n]);
    }
    Ok(inspector.finish())
}

#[cfg(test)]
mod tests {
    use crate::FindingKind;
    use crate::verify::chunk_fixture::{dataset, flip};
    use crate::verify::tests::options;
    use crate::verify::verify_path;

    #[test]
    fn every_chunk_is_checked_and_a_damaged_one_is_named_by_its_bytes() {
        let (dir, _) = dataset(None);
        let clean = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert!(clean.findings.is_empty(), "{:?}", clean.findings);
        assert_eq!(clean.bytes_checked, 100_000);
        flip(dir.path(), 40_000);
        flip(dir.path(), 99_999);
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        let [finding] = report.findings.as_slice() else {
            panic!("{:?}", report.findings)
        };
        assert_eq!(finding.kind, FindingKind::HashMismatch);
        assert_eq!((finding.offset, finding.end), (Some(36_864), Some(40_960)));
        assert!(
            finding.message.contains("2 of 7 chunk(s)")
                && finding
                    .message
                    .contains("chunk 2 (bytes 32768..49152), chunk 6 (bytes 98304..100000)"),
            "{}",
            finding.message
        );
    }

    #[test]
    fn a_list_this_version_cannot_use_falls_back_to_the_whole_file_digest() {
        for algorithm in ["sha256-tree-65536", "sha256-sharded-1000"] {
            let (dir, _) = dataset(Some(algorithm));
            let clean = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
            assert!(
                clean.findings.is_empty(),
                "{algorithm}: {:?}",
                clean.findings
            );
            flip(dir.path(), 40_000);
            let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
            let [finding] = report.findings.as_slice() else {
                panic!("{:?}", report.findings)
            };
            assert_eq!(finding.kind, FindingKind::HashMismatch);
            assert!(
                finding.message.contains("chunk(s) of 4096 bytes differ"),
                "{algorithm}: the CRC-located whole-file finding: {}",
                finding.message
            );
        }
    }

    #[test]
    fn a_file_of_another_size_is_compared_whole() {
        let (dir, _) = dataset(None);
        let path = dir.path().join("big.bin");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(70_000);
        std::fs::write(&path, bytes).unwrap();
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        let kinds: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [FindingKind::HashMismatch, FindingKind::SizeMismatch],
            "{:?}",
            report.findings
        );
    }
}
