//! A partial check: byte ranges of files checked by the chunk SHA-256s their manifest
//! entries list, reading only the chunks those ranges overlap (positioned reads, the
//! chunks of every file on every core). Nothing else is read: no other file, no other
//! chunk, no `SHA256SUMS`, and no format inspector walks a file (that needs all of it).
//! The manifest is judged as for a whole check (its root digest, `--expect-root`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;

use super::chunked::{BadChunk, hash_range};
use super::compare::compare;
use super::coverage::Seen;
use super::judge::judge_manifest;
use super::local::manifest_location;
use super::options::VerifyOptions;
use super::ranges::{CheckedRange, plan_ranges};
use super::report::{Expected, VerifyReport};
use super::steps::conclude;
use crate::digest::parse_chunks;
use crate::{ChunkDigests, Error, FileDigest, FileEntry, Finding, FindingKind, Manifest, Result};

/// The note every partial report carries.
pub(super) const PARTIAL_NOTE: &str = "partial check: only the chunks that cover the ranges asked for were read and compared with the manifest's chunk SHA-256s; no other byte, no other file, no SHA256SUMS and no file's structure was checked";

/// A chunk read: its SHA-256 and the CRCs of its blocks.
type ChunkRead = io::Result<([u8; 32], Vec<u32>)>;

/// One file whose chunks are read.
struct Open<'a> {
    entry: &'a FileEntry,
    file: File,
    ranges: Vec<CheckedRange>,
}

/// Checks `ranges` (a file relative to the dataset directory `path`, and bytes of it)
/// against the chunk digests of the manifest (`path/manifest.json`, or
/// `options.manifest`). A range the manifest cannot check (an unlisted file, bytes past
/// its recorded size, no usable chunk list) is an error before anything is read; a
/// damaged chunk is a `hash_mismatch` finding worded as in a whole check. The report's
/// `partial` lists the bytes checked, widened to whole chunks. `progress_total`
/// receives the number of bytes that will be read, `progress` each block as it is read.
pub fn verify_ranges(
    path: &Path,
    ranges: &[(String, Range<u64>)],
    options: &VerifyOptions<'_>,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<VerifyReport> {
    if let Some((rel, bytes)) = ranges.first()
        && (options.collect_digests || options.digest_check.is_some())
    {
        return Err(Error::Range {
            path: rel.clone(),
            start: bytes.start,
            end: bytes.end,
            reason: "whole-file digests (a signature to check) need every file read whole".into(),
        });
    }
    let (manifest_path, display) = manifest_location(path, options);
    let bytes = std::fs::read(&manifest_path)
        .map_err(|e| Error::io("reading manifest", &manifest_path, e))?;
    let mut report = VerifyReport::default();
    let (Some(manifest), _) =
        judge_manifest(&bytes, &manifest_path, options, &display, &mut report)?
    else {
        // Only a manifest that does not parse gives none; its error says why.
        return Err(Manifest::parse(&bytes, &manifest_path)
            .err()
            .unwrap_or_else(|| Error::BadManifest {
                path: manifest_path.clone(),
                reason: "it cannot be used".into(),
            }));
    };
    let plan = plan_ranges(&manifest, ranges)?;
    let files = open_files(path, &manifest, plan, &mut report);
    progress_total(
        files
            .iter()
            .flat_map(|f| &f.ranges)
            .map(CheckedRange::len)
            .sum(),
    );
    let jobs: Vec<(usize, usize)> = files
        .iter()
        .enumerate()
        .flat_map(|(f, open)| {
            open.ranges
                .iter()
                .flat_map(move |r| r.chunk_indices().map(move |i| (f, i)))
        })
        .collect();
    let crc_chunk = manifest.chunk_size;
    let read: Vec<ChunkRead> = jobs
        .par_iter()
        .map(|&(f, i)| {
            let open = &files[f];
            let chunk_size = open.ranges[0].chunk_size;
            let range = ChunkDigests::range(chunk_size, i, open.entry.size);
            hash_range(&open.file, range, crc_chunk, progress)
        })
        .collect();
    let mut seen = Vec::new();
    let mut checked = Vec::new();
    let mut results = read.into_iter().zip(jobs.iter().map(|&(_, i)| i));
    for open in files {
        let count = open.ranges.iter().map(|r| r.chunk_indices().len()).sum();
        let chunks: Vec<_> = results.by_ref().take(count).collect();
        let rel = &open.entry.path;
        let expected = Expected {
            entry: Some(open.entry.clone()),
            sha256: Some(open.entry.sha256.clone()),
        };
        match judge_chunks(open.entry, crc_chunk, chunks) {
            Ok((digest, bad)) => {
                report.files_checked += 1;
                report.bytes_checked += open.ranges.iter().map(CheckedRange::len).sum::<u64>();
                seen.push(Seen::new(rel, &expected, false));
                compare(rel, &expected, &digest, Some(&bad), None, &mut report);
                checked.extend(open.ranges);
            }
            Err(e) => report.findings.push(Finding::error(
                FindingKind::UnreadableFile,
                rel,
                format!("read failed: {e}"),
            )),
        }
    }
    report.partial = Some(checked);
    report.notes.push(PARTIAL_NOTE.into());
    conclude(&mut report, path, options, &seen, Some(&manifest), false);
    Ok(report)
}

/// The files of `plan` opened, in path order, with their ranges; a file that is absent,
/// unreadable or not of its recorded size is a finding instead (its chunks are not read).
fn open_files<'a>(
    root: &Path,
    manifest: &'a Manifest,
    plan: Vec<CheckedRange>,
    report: &mut VerifyReport,
) -> Vec<Open<'a>> {
    let mut by_file: BTreeMap<String, Vec<CheckedRange>> = BTreeMap::new();
    for range in plan {
        by_file.entry(range.path.clone()).or_default().push(range);
    }
    let mut files = Vec::new();
    for (rel, ranges) in by_file {
        let Some(entry) = manifest.files.iter().find(|e| e.path == rel) else {
            continue;
        };
        let full = root.join(&rel);
        let opened = File::open(&full).and_then(|file| Ok((file.metadata()?, file)));
        match opened {
            Err(e) if e.kind() == io::ErrorKind::NotFound => report.findings.push(
                Finding::error(
                    FindingKind::MissingFile,
                    &rel,
                    "listed in the manifest but not present",
                )
                .values(format!("{} bytes", entry.size), "no file"),
            ),
            Err(e) => report.findings.push(Finding::error(
                FindingKind::UnreadableFile,
                &rel,
                format!("read failed: {e}"),
            )),
            Ok((meta, _)) if !meta.is_file() => report.findings.push(Finding::error(
                FindingKind::UnreadableFile,
                &rel,
                "not a regular file",
            )),
            Ok((meta, _)) if meta.len() != entry.size => {
                // Its chunks no longer lie where the list says: the size is the finding.
                let digest = FileDigest {
                    size: meta.len(),
                    sha256: [0; 32],
                    chunk_size: manifest.chunk_size,
                    chunk_crc32: Vec::new(),
                    sharded: None,
                };
                let expected = Expected {
                    entry: Some(entry.clone()),
                    sha256: Some(entry.sha256.clone()),
                };
                compare(&rel, &expected, &digest, Some(&[]), None, report);
            }
            Ok((_, file)) => files.push(Open {
                entry,
                file,
                ranges,
            }),
        }
    }
    files
}

/// What reading some chunks of `entry` found: a digest of the recorded size whose CRCs
/// are the manifest's with those of the chunks read in their places (so a damaged
/// chunk is narrowed to its first differing CRC block as in a whole check), and the
/// chunks that differ; the first read failure instead, if any.
fn judge_chunks(
    entry: &FileEntry,
    crc_chunk: u64,
    chunks: Vec<(ChunkRead, usize)>,
) -> io::Result<(FileDigest, Vec<BadChunk>)> {
    let list = entry
        .chunks
        .as_ref()
        .map(|c| c.sha256.as_slice())
        .unwrap_or_default();
    let chunk_size = entry
        .chunks
        .as_ref()
        .and_then(ChunkDigests::chunk_size)
        .unwrap_or(crc_chunk);
    let mut crcs = parse_chunks(&entry.chunk_crc32).unwrap_or_default();
    let mut bad = Vec::new();
    for (result, index) in chunks {
        let (sha, chunk_crcs) = result?;
        let first =
            usize::try_from(index as u64 * (chunk_size / crc_chunk.max(1))).unwrap_or(usize::MAX);
        for (k, crc) in chunk_crcs.into_iter().enumerate() {
            if let Some(slot) = crcs.get_mut(first.saturating_add(k)) {
                *slot = crc;
            }
        }
        let actual = crate::hex(&sha);
        let want = list.get(index).cloned().unwrap_or_default();
        if !actual.eq_ignore_ascii_case(&want) {
            bad.push(BadChunk {
                index,
                range: ChunkDigests::range(chunk_size, index, entry.size),
                expected: want,
                actual,
            });
        }
    }
    let digest = FileDigest {
        size: entry.size,
        sha256: [0; 32],
        chunk_size: crc_chunk,
        chunk_crc32: crcs,
        sharded: None,
    };
    Ok((digest, bad))
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::verify_ranges;
    use crate::verify::chunk_fixture::{CHUNK, dataset, flip};
    use crate::verify::tests::options;
    use crate::verify::{VerifyReport, verify_path};
    use crate::{Error, FindingKind};

    const C: u64 = CHUNK as u64;

    /// The report of checking `ranges` of `big.bin`, and the bytes announced and read.
    fn check(dir: &std::path::Path, ranges: &[(u64, u64)]) -> (VerifyReport, u64, u64) {
        let ranges: Vec<(String, Range<u64>)> = ranges
            .iter()
            .map(|&(a, b)| ("big.bin".to_string(), a..b))
            .collect();
        let total = AtomicU64::new(0);
        let read = AtomicU64::new(0);
        let report = verify_ranges(
            dir,
            &ranges,
            &options(),
            &|n| total.store(n, Ordering::SeqCst),
            &|n| {
                read.fetch_add(n, Ordering::SeqCst);
            },
        )
        .unwrap();
        (report, total.into_inner(), read.into_inner())
    }

    fn spans(report: &VerifyReport) -> Vec<(u64, u64)> {
        let partial = report.partial.as_ref().expect("a partial report");
        partial.iter().map(|r| (r.start, r.end)).collect()
    }

    #[test]
    fn only_the_chunks_of_the_ranges_are_read_and_a_damaged_one_is_named() {
        let (dir, _) = dataset(None);
        std::fs::write(dir.path().join("stray.txt"), b"not listed").unwrap();
        flip(dir.path(), 40_000);
        flip(dir.path(), 99_999);
        let whole = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert_eq!(whole.findings.len(), 2, "{:?}", whole.findings);
        assert!(whole.partial.is_none());

        // Chunks 0 and 1: clean, and nothing else read (not the stray file either).
        let (clean, total, read) = check(dir.path(), &[(100, C + 1)]);
        assert!(clean.findings.is_empty(), "{:?}", clean.findings);
        assert_eq!(spans(&clean), [(0, 2 * C)]);
        assert_eq!((clean.bytes_checked, total, read), (2 * C, 2 * C, 2 * C));
        assert_eq!(clean.files_checked, 1);
        assert!(clean.notes.iter().any(|n| n.starts_with("partial check")));

        // One byte of chunk 2: named as in the whole check, narrowed to its CRC block.
        let (bad, _, read) = check(dir.path(), &[(40_000, 40_001)]);
        assert_eq!(read, C);
        let [finding] = bad.findings.as_slice() else {
            panic!("{:?}", bad.findings)
        };
        assert_eq!(finding.kind, FindingKind::HashMismatch);
        assert_eq!((finding.offset, finding.end), (Some(36_864), Some(40_960)));
        assert!(
            finding.message.contains("1 of 7 chunk(s)")
                && finding.message.contains("chunk 2 (bytes 32768..49152)"),
            "{}",
            finding.message
        );

        // Two ranges, the short last chunk among them.
        let (both, _, _) = check(dir.path(), &[(99_000, 100_000), (2 * C, 3 * C)]);
        assert_eq!(spans(&both), [(2 * C, 3 * C), (6 * C, 100_000)]);
        let [finding] = both.findings.as_slice() else {
            panic!("{:?}", both.findings)
        };
        assert!(
            finding
                .message
                .contains("chunk 2 (bytes 32768..49152), chunk 6 (bytes 98304..100000)"),
            "{}",
            finding.message
        );
    }

    #[test]
    fn a_file_of_another_size_is_a_finding_and_not_read() {
        let (dir, _) = dataset(None);
        let path = dir.path().join("big.bin");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(70_000);
        std::fs::write(&path, bytes).unwrap();
        let (report, total, read) = check(dir.path(), &[(0, 10)]);
        let kinds: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FindingKind::SizeMismatch], "{:?}", report.findings);
        assert_eq!((total, read, report.files_checked), (0, 0, 0));
        assert_eq!(spans(&report), []);
        std::fs::remove_file(&path).unwrap();
        let (report, _, _) = check(dir.path(), &[(0, 10)]);
        let kinds: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FindingKind::MissingFile], "{:?}", report.findings);
    }

    #[test]
    fn a_range_the_manifest_cannot_check_is_an_error() {
        let (dir, _) = dataset(None);
        let err = verify_ranges(
            dir.path(),
            &[("nope.bin".into(), 0..1)],
            &options(),
            &|_| {},
            &|_| {},
        )
        .unwrap_err();
        assert!(matches!(err, Error::Range { .. }), "{err}");
        let (dir, _) = dataset(Some("sha256-tree-65536"));
        let err = verify_ranges(
            dir.path(),
            &[("big.bin".into(), 0..1)],
            &options(),
            &|_| {},
            &|_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("sha256-tree-65536"), "{err}");
    }
}
