//! Which chunks a partial check reads: each byte range asked for (a file the manifest
//! lists, bytes inside its recorded size) widened to the chunks of its chunk list that
//! it overlaps, ranges of one file merged. Nothing here reads the data.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Serialize;

use crate::chunks::CHUNK_SHA_THRESHOLD;
use crate::{ChunkDigests, Error, FileEntry, Manifest, Result};

/// A file's bytes a partial check reads: whole chunks of its chunk list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CheckedRange {
    /// The file, relative to the dataset, as the manifest lists it.
    pub path: String,
    /// First byte checked: the start of `first_chunk`.
    pub start: u64,
    /// The byte after the last one checked: the end of `last_chunk`.
    pub end: u64,
    /// Index of the first chunk read (from 0).
    pub first_chunk: usize,
    /// Index of the last chunk read.
    pub last_chunk: usize,
    /// Chunks in the file's list.
    pub chunks: usize,
    /// Size of its chunks (the last one may be short).
    pub chunk_size: u64,
}

impl CheckedRange {
    /// Bytes it covers.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether it covers no byte (never, for a range [`plan_ranges`] made).
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The chunk indices it covers.
    pub fn chunk_indices(&self) -> Range<usize> {
        self.first_chunk..self.last_chunk + 1
    }
}

/// Indices of the `chunk_size`-byte chunks (from offset 0) that `bytes` overlaps; empty
/// for an empty range.
pub fn chunks_overlapping(bytes: &Range<u64>, chunk_size: u64) -> Range<usize> {
    if bytes.start >= bytes.end || chunk_size == 0 {
        return 0..0;
    }
    let index = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    index(bytes.start / chunk_size)..index(bytes.end.div_ceil(chunk_size))
}

/// The chunks each of `ranges` (a file relative to the dataset, and bytes of it) needs,
/// checked against `manifest` before anything is read: the file is listed, the range is
/// not empty and lies inside its recorded size, and its chunk list can be checked
/// (`crc_chunk` is the manifest's `chunk_size`, which every chunk must be a multiple of).
/// Ranges of one file merge when their chunks overlap or touch; the result is sorted by
/// path and offset. The first range that cannot be checked is the error.
pub fn plan_ranges(
    manifest: &Manifest,
    ranges: &[(String, Range<u64>)],
) -> Result<Vec<CheckedRange>> {
    let entries: BTreeMap<&str, &FileEntry> = manifest
        .files
        .iter()
        .map(|entry| (entry.path.as_str(), entry))
        .collect();
    let mut wanted: BTreeMap<&str, Vec<Range<usize>>> = BTreeMap::new();
    for (rel, bytes) in ranges {
        let refuse = |reason: String| Error::Range {
            path: rel.clone(),
            start: bytes.start,
            end: bytes.end,
            reason,
        };
        let Some(&entry) = entries.get(rel.as_str()) else {
            return Err(refuse(format!(
                "the manifest does not list it ({} file(s) listed; give the path relative to the dataset, as the manifest records it)",
                manifest.files.len()
            )));
        };
        let chunk_size = usable_list(manifest, entry).map_err(refuse)?;
        if bytes.start > bytes.end {
            return Err(refuse("the start is after the end".into()));
        }
        if bytes.end > entry.size {
            return Err(refuse(format!(
                "the end is past the end of the file ({} bytes, as the manifest records)",
                entry.size
            )));
        }
        if bytes.start == bytes.end {
            return Err(refuse("the range is empty".into()));
        }
        wanted
            .entry(entry.path.as_str())
            .or_default()
            .push(chunks_overlapping(bytes, chunk_size));
    }
    let mut plan = Vec::new();
    for (rel, mut spans) in wanted {
        let entry = entries[rel];
        let list = entry.chunks.as_ref().map_or(0, |c| c.sha256.len());
        let chunk_size = entry
            .chunks
            .as_ref()
            .and_then(ChunkDigests::chunk_size)
            .unwrap_or(1);
        spans.sort_by_key(|s| s.start);
        let mut merged: Vec<Range<usize>> = Vec::new();
        for span in spans {
            match merged.last_mut() {
                Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
                _ => merged.push(span),
            }
        }
        plan.extend(merged.into_iter().map(|span| CheckedRange {
            path: rel.to_string(),
            start: ChunkDigests::range(chunk_size, span.start, entry.size).start,
            end: ChunkDigests::range(chunk_size, span.end - 1, entry.size).end,
            first_chunk: span.start,
            last_chunk: span.end - 1,
            chunks: list,
            chunk_size,
        }));
    }
    Ok(plan)
}

/// The chunk size of `entry`'s chunk list when a range of it can be checked by the
/// list, else why not (and that the file can only be checked whole).
fn usable_list(manifest: &Manifest, entry: &FileEntry) -> std::result::Result<u64, String> {
    const WHOLE: &str = "it can only be checked whole (verify without a range)";
    let Some(list) = &entry.chunks else {
        let threshold = manifest
            .chunk_digests
            .map_or(CHUNK_SHA_THRESHOLD, |policy| policy.threshold);
        let why = match manifest.chunk_digests {
            Some(_) if entry.size < threshold => format!(
                "it has no chunk digests in the manifest (only files of at least {} get them, and it has {} bytes)",
                human(threshold),
                entry.size
            ),
            Some(_) => "it has no chunk digests in the manifest".to_string(),
            None => "it has no chunk digests: the manifest was written before chunk lists (re-run `shardsmith manifest` to record them for files of 1 GiB or more)".to_string(),
        };
        return Err(format!("{why}; {WHOLE}"));
    };
    let Some(chunk_size) = list.chunk_size() else {
        return Err(format!(
            "its chunk list is of an algorithm this version does not check (`{}`); {WHOLE}",
            list.algorithm
        ));
    };
    if !list.fits(entry.size) {
        return Err(format!(
            "its chunk list does not fit its recorded size ({} digest(s) of {chunk_size}-byte chunks for {} bytes); {WHOLE}",
            list.sha256.len(),
            entry.size
        ));
    }
    if manifest.chunk_size == 0 || !chunk_size.is_multiple_of(manifest.chunk_size) {
        return Err(format!(
            "its chunk size ({chunk_size} bytes) is not a multiple of the manifest's chunk_size ({}); {WHOLE}",
            manifest.chunk_size
        ));
    }
    Ok(chunk_size)
}

/// `1 GiB`, `64 MiB`, `1000 bytes`.
fn human(bytes: u64) -> String {
    match bytes {
        0 => "0 bytes".into(),
        b if b.is_multiple_of(1 << 30) => format!("{} GiB", b >> 30),
        b if b.is_multiple_of(1 << 20) => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkPolicy, ManifestKind};

    const CHUNK: u64 = 16 << 10;
    const CRC: u64 = 4096;

    /// `big.bin` of 100,000 bytes with 7 chunk digests of 16 KiB, and `small.txt`.
    fn manifest() -> Manifest {
        let mut big = FileEntry::new("big.bin", &crate::Digester::new(CRC).finish());
        big.size = 100_000;
        big.chunks = Some(ChunkDigests::new(CHUNK, &[[0u8; 32]; 7]));
        let mut small = FileEntry::new("small.txt", &crate::Digester::new(CRC).finish());
        small.size = 10;
        let mut m = Manifest::new(ManifestKind::Directory, CRC, vec![big, small]);
        m.chunk_digests = Some(ChunkPolicy {
            threshold: 50_000,
            chunk_size: CHUNK,
            ..ChunkPolicy::default()
        });
        m
    }

    fn plan(ranges: &[(&str, Range<u64>)]) -> Result<Vec<(u64, u64, usize, usize)>> {
        let ranges: Vec<(String, Range<u64>)> = ranges
            .iter()
            .map(|(p, r)| (p.to_string(), r.clone()))
            .collect();
        Ok(plan_ranges(&manifest(), &ranges)?
            .into_iter()
            .map(|c| (c.start, c.end, c.first_chunk, c.last_chunk))
            .collect())
    }

    fn reason(ranges: &[(&str, Range<u64>)]) -> String {
        plan(ranges).unwrap_err().to_string()
    }

    #[test]
    fn chunks_a_range_overlaps() {
        assert_eq!(chunks_overlapping(&(0..1), CHUNK), 0..1);
        // Within one chunk.
        assert_eq!(chunks_overlapping(&(20_000..30_000), CHUNK), 1..2);
        // The end exactly at a boundary takes no byte of the next chunk.
        assert_eq!(chunks_overlapping(&(0..CHUNK), CHUNK), 0..1);
        assert_eq!(chunks_overlapping(&(CHUNK..2 * CHUNK), CHUNK), 1..2);
        // One byte over a boundary takes both.
        assert_eq!(chunks_overlapping(&(CHUNK - 1..CHUNK + 1), CHUNK), 0..2);
        // The short last chunk.
        assert_eq!(chunks_overlapping(&(99_999..100_000), CHUNK), 6..7);
        assert_eq!(chunks_overlapping(&(5..5), CHUNK), 0..0);
    }

    #[test]
    fn ranges_widen_to_whole_chunks_and_merge() {
        assert_eq!(
            plan(&[("big.bin", 20_000..30_000)]).unwrap(),
            [(CHUNK, 2 * CHUNK, 1, 1)]
        );
        assert_eq!(plan(&[("big.bin", 0..CHUNK)]).unwrap(), [(0, CHUNK, 0, 0)]);
        // The short last chunk ends at the file's end.
        assert_eq!(
            plan(&[("big.bin", 98_304..100_000)]).unwrap(),
            [(98_304, 100_000, 6, 6)]
        );
        assert_eq!(
            plan(&[("big.bin", 0..100_000)]).unwrap(),
            [(0, 100_000, 0, 6)]
        );
        // Overlapping and touching chunks merge; a gap keeps two ranges, in order.
        assert_eq!(
            plan(&[
                ("big.bin", 90_000..91_000),
                ("big.bin", 1..2),
                ("big.bin", CHUNK..CHUNK + 1),
                ("big.bin", 40_000..50_000),
            ])
            .unwrap(),
            [(0, 4 * CHUNK, 0, 3), (81_920, 98_304, 5, 5)]
        );
        // Chunks 0 and 2 neither overlap nor touch.
        assert_eq!(
            plan(&[("big.bin", 1..2), ("big.bin", 40_000..40_001)]).unwrap(),
            [(0, CHUNK, 0, 0), (2 * CHUNK, 3 * CHUNK, 2, 2)]
        );
    }

    #[test]
    fn ranges_that_cannot_be_checked_are_refused_with_the_reason() {
        let unknown = reason(&[("nope.bin", 0..1)]);
        assert!(
            unknown.contains("`nope.bin`") && unknown.contains("does not list it"),
            "{unknown}"
        );
        assert!(
            reason(&[("big.bin", Range { start: 10, end: 5 })])
                .contains("the start is after the end")
        );
        let past = reason(&[("big.bin", 0..100_001)]);
        assert!(
            past.contains("past the end of the file (100000 bytes"),
            "{past}"
        );
        assert!(reason(&[("big.bin", 7..7)]).contains("empty"));
        let small = reason(&[("small.txt", 0..5)]);
        assert!(
            small.contains("no chunk digests")
                && small.contains("at least 50000 bytes")
                && small.contains("verify without a range"),
            "{small}"
        );
    }

    #[test]
    fn a_list_this_version_cannot_use_is_refused() {
        let mut m = manifest();
        m.files[0].chunks.as_mut().unwrap().algorithm = "sha256-tree-65536".into();
        let err = plan_ranges(&m, &[("big.bin".into(), 0..1)]).unwrap_err();
        assert!(err.to_string().contains("`sha256-tree-65536`"), "{err}");
        let mut m = manifest();
        m.files[0].chunks = Some(ChunkDigests::new(1000, &[[0u8; 32]; 100]));
        let err = plan_ranges(&m, &[("big.bin".into(), 0..1)]).unwrap_err();
        assert!(err.to_string().contains("not a multiple"), "{err}");
        let mut m = manifest();
        m.chunk_digests = None;
        m.files[0].chunks = None;
        let err = plan_ranges(&m, &[("big.bin".into(), 0..1)]).unwrap_err();
        assert!(err.to_string().contains("before chunk lists"), "{err}");
    }
}
