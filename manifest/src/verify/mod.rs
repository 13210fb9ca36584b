//! Checking a directory (or one file) against its manifest, reading every file once.
//!
//! With a manifest: every listed file present with the recorded size and SHA-256 (a
//! mismatch is located to its first differing chunk through the chunk CRCs), nothing
//! unlisted, the root digest consistent (and equal to a pinned value), `SHA256SUMS`
//! consistent, and each file's inspector (a tar walker, ...) clean with the recorded
//! sample count and keys. Without one: every file's inspector, `SHA256SUMS` when present,
//! and gaps in numbered shard sequences ([`sequence`]). Comparing one file with what
//! was expected is [`compare`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::scan::{FileRead, digest_file};
use crate::unfinished;
use crate::walk::{self, rel_string};
use crate::{
    DEFAULT_CHUNK_SIZE, Error, FileContext, Finding, FindingKind, MANIFEST_FILE, Manifest, Result,
    SUMS_FILE, sums,
};

/// Verifies `path`, a dataset directory or a single file. `progress_total` receives the
/// number of bytes that will be read, `progress` each block as it is read.
pub fn verify_path(
    path: &Path,
    options: &VerifyOptions<'_>,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<VerifyReport> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io("reading", path, e))?;
    if meta.is_file() {
        return verify_file(path, meta.len(), options, progress_total, progress);
    }
    let mut report = VerifyReport::default();
    let manifest_path = options
        .manifest
        .clone()
        .unwrap_or_else(|| path.join(MANIFEST_FILE));
    let manifest_display = if options.manifest.is_some() {
        manifest_path.display().to_string()
    } else {
        MANIFEST_FILE.to_string()
    };
    let (manifest, foreign) =
        load_manifest(&manifest_path, options, &manifest_display, &mut report)?;
    // A `manifest.json` of another tool is one of the files to check, not ours to skip.
    let own_manifest = manifest_path
        .strip_prefix(path)
        .ok()
        .map(Path::to_path_buf)
        .filter(|_| !foreign)
        .unwrap_or_else(|| PathBuf::from(MANIFEST_FILE));
    let walked = walk::walk(path, &|rel, _| {
        (foreign || rel != own_manifest) && rel != Path::new(SUMS_FILE)
    })?;
    let present: BTreeMap<String, u64> = walked
        .files
        .iter()
        .map(|f| {
            (
                rel_string(&f.rel).unwrap_or_else(|| f.rel.to_string_lossy().into_owned()),
                f.size,
            )
        })
        .collect();
    let unreadable: HashMap<String, String> = walked
        .skipped
        .iter()
        .map(|s| (s.rel.to_string_lossy().into_owned(), s.reason.clone()))
        .collect();

    let sums_path = path.join(SUMS_FILE);
    let sums = match std::fs::read_to_string(&sums_path) {
        Ok(text) => Some(sums::parse(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            report.findings.push(Finding::error(
                FindingKind::SumsMismatch,
                SUMS_FILE,
                format!("cannot be read: {e}"),
            ));
            None
        }
    };

    let mut tasks: Vec<(String, u64, Expected)> = Vec::new();
    match &manifest {
        Some(m) => {
            let mut listed = BTreeSet::new();
            for entry in &m.files {
                listed.insert(entry.path.clone());
                match present.get(&entry.path) {
                    Some(&size) => tasks.push((
                        entry.path.clone(),
                        size,
                        Expected {
                            entry: Some(entry.clone()),
                            sha256: Some(entry.sha256.clone()),
                        },
                    )),
                    None => report.findings.push(match unreadable.get(&entry.path) {
                        Some(reason) => {
                            Finding::error(FindingKind::UnreadableFile, &entry.path, reason.clone())
                        }
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
            if let Some(parsed) = &sums {
                check_sums(parsed, m, &mut report);
            }
        }
        None => {
            let unfinished = unfinished::in_directory(path);
            if let Some(u) = &unfinished {
                report.findings.push(u.finding());
            }
            let expected_sums: HashMap<String, String> = match &sums {
                Some(Ok(lines)) => lines
                    .iter()
                    .map(|l| (l.path.clone(), l.sha256.clone()))
                    .collect(),
                Some(Err((line, reason))) => {
                    report.findings.push(Finding::error(
                        FindingKind::SumsMismatch,
                        SUMS_FILE,
                        format!("line {line}: {reason}"),
                    ));
                    HashMap::new()
                }
                None => HashMap::new(),
            };
            if let Some(Ok(lines)) = &sums {
                for line in lines.iter().filter(|l| !present.contains_key(&l.path)) {
                    report.findings.push(Finding::error(
                        FindingKind::MissingFile,
                        &line.path,
                        format!("listed in {SUMS_FILE} but not present"),
                    ));
                }
                report
                    .notes
                    .push(format!("no manifest: hashes checked against {SUMS_FILE}"));
            } else if report.manifest.is_none() && options.digest_check.is_some() {
                report.notes.push(
                    "no manifest and no SHA256SUMS: file digests were checked against the signature, and files of a known format by their structure".into(),
                );
            } else if report.manifest.is_none() && unfinished.is_none() {
                report.notes.push(
                    "no manifest and no SHA256SUMS: only files of a known format can be checked, by their structure; run `shardsmith manifest` when the data is written to make verification exact".into(),
                );
            }
            for (rel, &size) in &present {
                if is_temp(rel) {
                    // The unfinished run's state is one finding, not one per file.
                    if unfinished.is_none() || !unfinished::is_state(rel) {
                        report.findings.push(unlisted_finding(rel));
                    }
                    continue;
                }
                let sha256 = expected_sums.get(rel).cloned();
                if sums.as_ref().is_some_and(Result::is_ok) && sha256.is_none() {
                    report.findings.push(unlisted_finding(rel));
                }
                tasks.push((
                    rel.clone(),
                    size,
                    Expected {
                        entry: None,
                        sha256,
                    },
                ));
            }
            sequence_gaps(present.keys(), &mut report.findings);
        }
    }
    for skip in &walked.skipped {
        let rel = skip.rel.to_string_lossy();
        let listed = manifest
            .as_ref()
            .is_some_and(|m| m.files.iter().any(|f| f.path == rel));
        if !listed {
            report.findings.push(Finding::warning(
                FindingKind::UnreadableFile,
                rel,
                skip.reason.clone(),
            ));
        }
    }

    progress_total(tasks.iter().map(|t| t.1).sum());
    let chunk_size = manifest
        .as_ref()
        .map_or(DEFAULT_CHUNK_SIZE, |m| m.chunk_size);
    let manifest_ref = manifest.as_ref();
    let results: Vec<(String, Expected, FileRead)> = tasks
        .into_par_iter()
        .map(|(rel, _, expected)| {
            let ctx = FileContext {
                root: path,
                path: &rel,
                entry: expected.entry.as_ref(),
                manifest: manifest_ref,
            };
            let result = digest_file(
                &path.join(&rel),
                &ctx,
                chunk_size,
                options.inspectors,
                progress,
            );
            (rel, expected, result)
        })
        .collect();
    let mut inspections = BTreeMap::new();
    let mut seen = Vec::with_capacity(results.len());
    for (rel, expected, result) in results {
        match result {
            Ok((digest, inspection)) => {
                report.files_checked += 1;
                report.bytes_checked += digest.size;
                seen.push(Seen::new(&rel, &expected, inspection.is_some()));
                if options.collect_digests || options.digest_check.is_some() {
                    report.digests.insert(rel.clone(), digest.sha256);
                }
                if let Some(inspection) = compare(&rel, &expected, &digest, inspection, &mut report)
                {
                    inspections.insert(rel, inspection);
                }
            }
            Err(e) => report.findings.push(Finding::error(
                FindingKind::UnreadableFile,
                rel,
                format!("read failed: {e}"),
            )),
        }
    }
    report.findings.extend(options.inspectors.check_layout(
        path,
        &present,
        &inspections,
        manifest_ref,
    ));
    finish(&mut report, path, options, &seen);
    if !options.allow_empty
        && let Some(finding) = nothing_to_verify(&report, manifest_ref, sums.is_some())
    {
        report.findings.push(finding);
    }
    report
        .findings
        .sort_by(|a, b| (&a.path, a.offset, a.kind).cmp(&(&b.path, b.offset, b.kind)));
    Ok(report)
}

/// The manifest, if usable, and whether the file at its place is another tool's JSON
/// (then one of the data files). A damaged manifest of ours is a finding.
fn load_manifest(
    manifest_path: &Path,
    options: &VerifyOptions<'_>,
    display: &str,
    report: &mut VerifyReport,
) -> Result<(Option<Manifest>, bool)> {
    let bytes = match std::fs::read(manifest_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound && options.manifest.is_none() => {
            judge::no_pin(report, options, display, "there is no manifest");
            return Ok((None, false));
        }
        Err(e) => return Err(Error::io("reading manifest", manifest_path, e)),
    };
    judge_manifest(&bytes, manifest_path, options, display, report)
}

/// Single-file mode: the inspector only (no manifest entry to compare with).
fn verify_file(
    path: &Path,
    size: u64,
    options: &VerifyOptions<'_>,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<VerifyReport> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    progress_total(size);
    let mut report = VerifyReport::default();
    let root = path.parent().unwrap_or(Path::new("."));
    let ctx = FileContext {
        root,
        path: &name,
        entry: None,
        manifest: None,
    };
    let (digest, inspection) =
        digest_file(path, &ctx, DEFAULT_CHUNK_SIZE, options.inspectors, progress)
            .map_err(|e| Error::io("reading", path, e))?;
    report.files_checked = 1;
    report.bytes_checked = digest.size;
    if options.collect_digests || options.digest_check.is_some() {
        report.digests.insert(".".into(), digest.sha256);
    }
    let seen = [Seen::new(".", &Expected::default(), inspection.is_some())];
    let covered = finish(&mut report, path, options, &seen);
    for example in &mut report.checked.unchecked_examples {
        example.clone_from(&name);
    }
    match &inspection {
        Some(_) => report.notes.push(
            "single file: structure checked; verify its directory to compare with the manifest"
                .into(),
        ),
        None => {
            report.notes.push(format!(
                "single file of no known format: only read (SHA-256 {})",
                digest.sha256_hex()
            ));
            if !options.allow_empty && !covered {
                report.findings.push(Finding::error(
                    FindingKind::NothingToVerify,
                    &name,
                    "the file is of no format shardsmith checks, and a single file has no manifest entry to compare with; verify its directory (with its manifest), or pass --allow-empty if that is expected",
                ));
            }
        }
    }
    if let Some(inspection) = inspection {
        report.samples = inspection.samples.unwrap_or(0);
        report.findings = inspection.findings;
    }
    Ok(report)
}

mod compare;
mod coverage;
mod judge;
mod options;
mod report;
mod sequence;
mod streamed;

use compare::{check_sums, compare, is_temp, unlisted_finding};
use coverage::{Seen, finish, nothing_to_verify};
use judge::judge_manifest;
pub use options::{DigestCheck, DigestCheckOutcome, VerifyOptions};
use report::Expected;
pub use report::{Coverage, VerifyReport};
use sequence::sequence_gaps;
pub use streamed::{ListedDataset, verify_listed};

#[cfg(test)]
mod tests;
