//! The steps both drivers take, over a local tree ([`super::local`]) and over a listed
//! one ([`super::listed`]): which files to read against the manifest, what one read
//! found, and the conclusion of the report.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;

use super::chunked::BadChunk;
use super::compare::{compare, unlisted_finding};
use super::coverage::{Seen, finish, nothing_to_verify};
use super::options::VerifyOptions;
use super::report::{Expected, VerifyReport};
use crate::{FileDigest, Finding, FindingKind, Inspection, Manifest};

/// What reading one file gave: its digest, its inspection, and, when it was checked by
/// its chunk list, the chunks that differ (its SHA-256 is then not computed).
pub(super) struct Checked {
    pub(super) digest: FileDigest,
    pub(super) inspection: Option<Inspection>,
    pub(super) bad_chunks: Option<Vec<BadChunk>>,
}

impl Checked {
    /// A file read whole.
    pub(super) fn whole(digest: FileDigest, inspection: Option<Inspection>) -> Self {
        Self {
            digest,
            inspection,
            bad_chunks: None,
        }
    }
}

/// One file to read: its path, its size as present, and what it should be.
pub(super) struct ToRead {
    pub(super) rel: String,
    pub(super) size: u64,
    pub(super) expected: Expected,
}

/// The listed files that are present, to be read against their entries; a listed file
/// that is absent is a finding (an unreadable one, when `unreadable` says why), and so
/// is a present file the manifest does not list.
pub(super) fn listed_files(
    manifest: &Manifest,
    present: &BTreeMap<String, u64>,
    unreadable: &dyn Fn(&str) -> Option<String>,
    report: &mut VerifyReport,
) -> Vec<ToRead> {
    let mut tasks = Vec::new();
    let mut listed = BTreeSet::new();
    for entry in &manifest.files {
        listed.insert(entry.path.clone());
        match present.get(&entry.path) {
            Some(&size) => tasks.push(ToRead {
                rel: entry.path.clone(),
                size,
                expected: Expected {
                    entry: Some(entry.clone()),
                    sha256: Some(entry.sha256.clone()),
                },
            }),
            None => report.findings.push(match unreadable(&entry.path) {
                Some(reason) => Finding::error(FindingKind::UnreadableFile, &entry.path, reason),
                None => Finding::error(
                    FindingKind::MissingFile,
                    &entry.path,
                    "listed in the manifest but not present",
                )
                .values(format!("{} bytes", entry.size), "no file"),
            }),
        }
    }
    for rel in present.keys().filter(|rel| !listed.contains(*rel)) {
        report.findings.push(unlisted_finding(rel));
    }
    tasks
}

/// The bytes all of `tasks` will read.
pub(super) fn total_size(tasks: &[ToRead]) -> u64 {
    tasks.iter().map(|t| t.size).sum()
}

/// Records what reading one file found: counted, its digest kept when asked for and
/// compared with what was expected, or the read failure as a finding. Returns the
/// file's inspection for the dataset-level check.
pub(super) fn record_read(
    report: &mut VerifyReport,
    seen: &mut Vec<Seen>,
    options: &VerifyOptions<'_>,
    task: &ToRead,
    read: io::Result<Checked>,
) -> Option<Inspection> {
    let rel = &task.rel;
    match read {
        Ok(Checked {
            digest,
            inspection,
            bad_chunks,
        }) => {
            report.files_checked += 1;
            report.bytes_checked += digest.size;
            seen.push(Seen::new(rel, &task.expected, inspection.is_some()));
            if options.collect_digests || options.digest_check.is_some() {
                report.digests.insert(rel.clone(), digest.sha256);
            }
            compare(
                rel,
                &task.expected,
                &digest,
                bad_chunks.as_deref(),
                inspection,
                report,
            )
        }
        Err(e) => {
            report.findings.push(Finding::error(
                FindingKind::UnreadableFile,
                rel,
                format!("read failed: {e}"),
            ));
            None
        }
    }
}

/// The end of every verification: the caller's digest check and the coverage counted,
/// "nothing to verify" unless allowed, and the findings in path order.
pub(super) fn conclude(
    report: &mut VerifyReport,
    root: &Path,
    options: &VerifyOptions<'_>,
    seen: &[Seen],
    manifest: Option<&Manifest>,
    has_sums: bool,
) {
    finish(report, root, options, seen);
    if !options.allow_empty
        && let Some(finding) = nothing_to_verify(report, manifest, has_sums)
    {
        report.findings.push(finding);
    }
    report
        .findings
        .sort_by(|a, b| (&a.path, a.offset, a.kind).cmp(&(&b.path, b.offset, b.kind)));
}
