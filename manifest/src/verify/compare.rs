//! Comparing what was read with what was expected: one file against its manifest
//! entry, `SHA256SUMS` against the manifest, and the findings for unlisted files.

use std::collections::{BTreeSet, HashMap};

use super::chunked::BadChunk;
use super::report::{Expected, VerifyReport};
use crate::digest::parse_chunks;
use crate::{
    CHANGED, FileDigest, FileEntry, Finding, FindingKind, Inspection, Manifest, SUMS_FILE,
    TEMP_PREFIX, sums,
};

pub(super) fn is_temp(rel: &str) -> bool {
    rel.split('/').any(|part| part.starts_with(TEMP_PREFIX))
}

pub(super) fn unlisted_finding(rel: &str) -> Finding {
    if is_temp(rel) {
        Finding::warning(
            FindingKind::LeftoverTempFile,
            rel,
            "temporary file of an interrupted shardsmith run; re-run the same command to finish, or delete it",
        )
    } else {
        Finding::error(
            FindingKind::UnlistedFile,
            rel,
            "present but not listed in the manifest (stale or foreign file)",
        )
    }
}

pub(super) fn check_sums(
    parsed: &Result<Vec<sums::SumLine>, (usize, String)>,
    manifest: &Manifest,
    report: &mut VerifyReport,
) {
    let lines = match parsed {
        Ok(lines) => lines,
        Err((line, reason)) => {
            report.findings.push(Finding::error(
                FindingKind::SumsMismatch,
                SUMS_FILE,
                format!("line {line}: {reason}"),
            ));
            return;
        }
    };
    let in_sums: HashMap<&str, &str> = lines
        .iter()
        .map(|l| (l.path.as_str(), l.sha256.as_str()))
        .collect();
    for entry in &manifest.files {
        match in_sums.get(entry.path.as_str()) {
            Some(&sha) if sha == entry.sha256 => {}
            Some(&sha) => report.findings.push(
                Finding::error(
                    FindingKind::SumsMismatch,
                    SUMS_FILE,
                    format!("digest of `{}` differs from the manifest", entry.path),
                )
                .values(&entry.sha256, sha),
            ),
            None => report.findings.push(Finding::error(
                FindingKind::SumsMismatch,
                SUMS_FILE,
                format!("`{}` is in the manifest but not in {SUMS_FILE}", entry.path),
            )),
        }
    }
    let listed: BTreeSet<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    for line in lines.iter().filter(|l| !listed.contains(l.path.as_str())) {
        report.findings.push(Finding::error(
            FindingKind::SumsMismatch,
            SUMS_FILE,
            format!("`{}` is in {SUMS_FILE} but not in the manifest", line.path),
        ));
    }
}

/// Compares one file with what was expected; returns its inspection (findings moved
/// into the report) for the dataset-level check.
pub(super) fn compare(
    rel: &str,
    expected: &Expected,
    digest: &FileDigest,
    bad_chunks: Option<&[BadChunk]>,
    inspection: Option<Inspection>,
    report: &mut VerifyReport,
) -> Option<Inspection> {
    let entry = expected.entry.as_ref();
    let findings_before = report.findings.len();
    if let Some(entry) = entry
        && entry.size != digest.size
    {
        let kind = if digest.size < entry.size {
            "shorter"
        } else {
            "longer"
        };
        report.findings.push(
            Finding::error(
                FindingKind::SizeMismatch,
                rel,
                format!("file is {kind} than the manifest records"),
            )
            .at(entry.size.min(digest.size))
            .values(entry.size, digest.size),
        );
    }
    if let (Some(bad), Some(entry)) = (bad_chunks, entry) {
        if let Some(finding) = chunks_finding(rel, entry, bad, digest) {
            report.findings.push(finding);
        }
    } else if let Some(sha) = &expected.sha256
        && !sha.eq_ignore_ascii_case(&digest.sha256_hex())
    {
        let mut finding = Finding::error(
            FindingKind::HashMismatch,
            rel,
            "SHA-256 differs from the manifest",
        )
        .values(sha, digest.sha256_hex());
        if let Some(entry) = entry
            && let Some(chunks) = parse_chunks(&entry.chunk_crc32)
        {
            finding = locate(finding, &chunks, entry.size, digest);
        }
        report.findings.push(finding);
    }
    let mut inspection = inspection?;
    if report.findings.len() > findings_before {
        inspection.facts.insert(CHANGED.into(), true.into());
    }
    report.samples += inspection.samples.unwrap_or(0);
    let fact = |name: &str| {
        inspection
            .facts
            .get(name)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    report.documents += fact("documents");
    report.tokens += fact("tokens");
    if let Some(entry) = entry {
        compare_samples(rel, entry, &inspection, report);
    }
    report.findings.append(&mut inspection.findings);
    Some(inspection)
}

/// What the inspector read against what the manifest records: the sample count, and
/// the first and last keys (unless the count already differs: keys that differ because
/// samples are missing add nothing to that finding).
fn compare_samples(
    rel: &str,
    entry: &FileEntry,
    inspection: &Inspection,
    report: &mut VerifyReport,
) {
    let count_differs = entry.samples.is_some()
        && inspection.samples.is_some()
        && entry.samples != inspection.samples;
    if count_differs {
        report.findings.push(
            Finding::error(
                FindingKind::SampleCountMismatch,
                rel,
                "readers would see a different number of samples than were written",
            )
            .values(entry.samples.unwrap_or(0), inspection.samples.unwrap_or(0)),
        );
        return;
    }
    for (which, want, got) in [
        ("first", &entry.first_key, &inspection.first_key),
        ("last", &entry.last_key, &inspection.last_key),
    ] {
        if let (Some(want), Some(got)) = (want, got)
            && want != got
        {
            report.findings.push(
                Finding::error(
                    FindingKind::KeyMismatch,
                    rel,
                    format!("{which} sample key differs from the manifest"),
                )
                .values(want, got),
            );
        }
    }
}

/// The finding for a file checked by its chunk list: every differing chunk named by its
/// byte range (the first few in the message), the range shown narrowed to the first
/// differing CRC chunk inside the first bad one.
fn chunks_finding(
    rel: &str,
    entry: &FileEntry,
    bad: &[BadChunk],
    digest: &FileDigest,
) -> Option<Finding> {
    let first = bad.first()?;
    let total = entry.chunks.as_ref().map_or(0, |c| c.sha256.len());
    let listed: Vec<String> = bad
        .iter()
        .take(8)
        .map(|b| format!("{} (bytes {}..{})", b.index, b.range.start, b.range.end))
        .collect();
    let more = match bad.len() {
        n if n > 8 => format!(" and {} more", n - 8),
        _ => String::new(),
    };
    let size = first.range.end - first.range.start;
    let message = format!(
        "SHA-256 differs from the manifest: {} of {total} chunk(s) of {} differ by their chunk digests: chunk {}{more}; the range shown is the first differing {} in it",
        bad.len(),
        human_chunk(
            entry
                .chunks
                .as_ref()
                .and_then(crate::ChunkDigests::chunk_size)
                .unwrap_or(size)
        ),
        listed.join(", chunk "),
        block_name(digest.chunk_size),
    );
    let (start, end) = parse_chunks(&entry.chunk_crc32)
        .and_then(|expected| {
            let crc = digest.chunk_size;
            let from = usize::try_from(first.range.start / crc).ok()?;
            let to = usize::try_from(first.range.end.div_ceil(crc)).ok()?;
            (from..to.min(expected.len()).min(digest.chunk_crc32.len()))
                .find(|&i| expected[i] != digest.chunk_crc32[i])
                .map(|i| {
                    let start = i as u64 * crc;
                    (start, (start + crc).min(first.range.end))
                })
        })
        .unwrap_or((first.range.start, first.range.end));
    Some(
        Finding::error(FindingKind::HashMismatch, rel, message)
            .values(&first.expected, &first.actual)
            .range(start, end),
    )
}

/// Narrows a hash mismatch to the first chunk whose CRC differs.
fn locate(finding: Finding, expected: &[u32], expected_size: u64, digest: &FileDigest) -> Finding {
    let chunk = digest.chunk_size;
    let common = expected.len().min(digest.chunk_crc32.len());
    let differing: Vec<usize> = (0..common)
        .filter(|&i| {
            let full_in_both =
                (i as u64 + 1).saturating_mul(chunk) <= expected_size.min(digest.size);
            expected[i] != digest.chunk_crc32[i] || !full_in_both && expected_size != digest.size
        })
        .collect();
    let first = differing.first().copied().unwrap_or(common) as u64;
    // The chunk size comes from the manifest: no product may overflow.
    let size = expected_size.max(digest.size);
    let start = first.saturating_mul(chunk).min(size);
    let end = first.saturating_add(1).saturating_mul(chunk).min(size);
    let count = differing.len() + expected.len().max(digest.chunk_crc32.len()) - common;
    let total = expected.len().max(digest.chunk_crc32.len());
    let message = format!(
        "SHA-256 differs from the manifest: {count} of {total} chunk(s) of {} differ; the range shown is the first",
        human_chunk(chunk)
    );
    Finding { message, ..finding }.range(start, end)
}

/// "1 MiB block", "4096-byte block".
fn block_name(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB block", bytes >> 20)
    } else {
        format!("{bytes}-byte block")
    }
}

fn human_chunk(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}
