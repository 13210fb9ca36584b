//! Verifying a local dataset directory (or one file): the files walked, read in
//! parallel with their format inspectors, and checked against the manifest, or without
//! one against `SHA256SUMS` and by their structure.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::chunked;
use super::compare::{check_sums, is_temp, unlisted_finding};
use super::coverage::{Seen, finish};
use super::judge::{self, judge_manifest};
use super::options::VerifyOptions;
use super::report::{Expected, VerifyReport};
use super::sequence::sequence_gaps;
use super::steps::{Checked, ToRead, conclude, listed_files, record_read, total_size};
use crate::scan::digest_file;
use crate::sums::{self, SumLine};
use crate::unfinished::{self, Unfinished};
use crate::walk::{self, Walk, rel_string};
use crate::{
    DEFAULT_CHUNK_SIZE, Error, FileContext, Finding, FindingKind, MANIFEST_FILE, Manifest, Result,
    SUMS_FILE,
};

/// `SHA256SUMS` as read: absent, its lines, or the line that does not parse and why.
type Sums = Option<std::result::Result<Vec<SumLine>, (usize, String)>>;

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
    let (manifest_path, manifest_display) = manifest_location(path, options);
    let (manifest, foreign) =
        load_manifest(&manifest_path, options, &manifest_display, &mut report)?;
    let walked = walk_data(path, &manifest_path, foreign)?;
    let present = present_files(&walked);
    let sums = read_sums(path, &mut report);
    let tasks = match &manifest {
        Some(m) => manifest_files(m, &walked, &present, &sums, &mut report),
        None => unlisted_files(path, &present, &sums, options, &mut report),
    };
    note_unreadable(&walked, manifest.as_ref(), &mut report);

    progress_total(total_size(&tasks));
    let chunk_size = manifest
        .as_ref()
        .map_or(DEFAULT_CHUNK_SIZE, |m| m.chunk_size);
    let results = read_all(
        path,
        tasks,
        manifest.as_ref(),
        chunk_size,
        options,
        progress,
    );
    let mut inspections = BTreeMap::new();
    let mut seen = Vec::with_capacity(results.len());
    for (task, result) in results {
        if let Some(inspection) = record_read(&mut report, &mut seen, options, &task, result) {
            inspections.insert(task.rel, inspection);
        }
    }
    report.findings.extend(options.inspectors.check_layout(
        path,
        &present,
        &inspections,
        manifest.as_ref(),
    ));
    conclude(
        &mut report,
        path,
        options,
        &seen,
        manifest.as_ref(),
        sums.is_some(),
    );
    Ok(report)
}

/// Where the manifest is, and how findings name it (its path when given, else its
/// name in the directory).
pub(super) fn manifest_location(path: &Path, options: &VerifyOptions<'_>) -> (PathBuf, String) {
    let manifest_path = options
        .manifest
        .clone()
        .unwrap_or_else(|| path.join(MANIFEST_FILE));
    let display = if options.manifest.is_some() {
        manifest_path.display().to_string()
    } else {
        MANIFEST_FILE.to_string()
    };
    (manifest_path, display)
}

/// With a manifest: the listed files to read (a listed file the walk could not read is
/// an unreadable one), and `SHA256SUMS` checked against the manifest.
fn manifest_files(
    manifest: &Manifest,
    walked: &Walk,
    present: &BTreeMap<String, u64>,
    sums: &Sums,
    report: &mut VerifyReport,
) -> Vec<ToRead> {
    let unreadable: HashMap<String, String> = walked
        .skipped
        .iter()
        .map(|s| (s.rel.to_string_lossy().into_owned(), s.reason.clone()))
        .collect();
    let tasks = listed_files(
        manifest,
        present,
        &|rel| unreadable.get(rel).cloned(),
        report,
    );
    if let Some(parsed) = sums {
        check_sums(parsed, manifest, report);
    }
    tasks
}

/// The files below `path` but the manifest (unless it is another tool's JSON, then one
/// of the data files) and `SHA256SUMS`.
fn walk_data(path: &Path, manifest_path: &Path, foreign: bool) -> Result<Walk> {
    let own_manifest = manifest_path
        .strip_prefix(path)
        .ok()
        .map(Path::to_path_buf)
        .filter(|_| !foreign)
        .unwrap_or_else(|| PathBuf::from(MANIFEST_FILE));
    walk::walk(path, &|rel, _| {
        (foreign || rel != own_manifest) && rel != Path::new(SUMS_FILE)
    })
}

/// The walked files by `/`-separated path, with their sizes.
fn present_files(walked: &Walk) -> BTreeMap<String, u64> {
    walked
        .files
        .iter()
        .map(|f| {
            (
                rel_string(&f.rel).unwrap_or_else(|| f.rel.to_string_lossy().into_owned()),
                f.size,
            )
        })
        .collect()
}

/// `SHA256SUMS` of the directory; one that cannot be read is a finding.
fn read_sums(path: &Path, report: &mut VerifyReport) -> Sums {
    match std::fs::read_to_string(path.join(SUMS_FILE)) {
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
    }
}

/// Without a manifest: every present file is read, against `SHA256SUMS` when it lists
/// it; an unfinished run, listed files that are absent, temporary files and gaps in
/// numbered sequences are findings, and a note says what the check rests on.
fn unlisted_files(
    path: &Path,
    present: &BTreeMap<String, u64>,
    sums: &Sums,
    options: &VerifyOptions<'_>,
    report: &mut VerifyReport,
) -> Vec<ToRead> {
    let unfinished = unfinished::in_directory(path);
    if let Some(u) = &unfinished {
        report.findings.push(u.finding());
    }
    let expected_sums = sums_by_path(sums, present, report);
    note_basis(sums, unfinished.as_ref(), options, report);
    let mut tasks = Vec::new();
    for (rel, &size) in present {
        if is_temp(rel) {
            // The unfinished run's state is one finding, not one per file.
            if unfinished.is_none() || !unfinished::is_state(rel) {
                report.findings.push(unlisted_finding(rel));
            }
            continue;
        }
        let sha256 = expected_sums.get(rel).cloned();
        if sums.as_ref().is_some_and(|s| s.is_ok()) && sha256.is_none() {
            report.findings.push(unlisted_finding(rel));
        }
        tasks.push(ToRead {
            rel: rel.clone(),
            size,
            expected: Expected {
                entry: None,
                sha256,
            },
        });
    }
    sequence_gaps(present.keys(), &mut report.findings);
    tasks
}

/// The digests `SHA256SUMS` records, by path; a line that does not parse, and a listed
/// file that is absent, are findings.
fn sums_by_path(
    sums: &Sums,
    present: &BTreeMap<String, u64>,
    report: &mut VerifyReport,
) -> HashMap<String, String> {
    match sums {
        Some(Ok(lines)) => {
            for line in lines.iter().filter(|l| !present.contains_key(&l.path)) {
                report.findings.push(Finding::error(
                    FindingKind::MissingFile,
                    &line.path,
                    format!("listed in {SUMS_FILE} but not present"),
                ));
            }
            lines
                .iter()
                .map(|l| (l.path.clone(), l.sha256.clone()))
                .collect()
        }
        Some(Err((line, reason))) => {
            report.findings.push(Finding::error(
                FindingKind::SumsMismatch,
                SUMS_FILE,
                format!("line {line}: {reason}"),
            ));
            HashMap::new()
        }
        None => HashMap::new(),
    }
}

/// The note that says what a check without a manifest rests on.
fn note_basis(
    sums: &Sums,
    unfinished: Option<&Unfinished>,
    options: &VerifyOptions<'_>,
    report: &mut VerifyReport,
) {
    if let Some(Ok(_)) = sums {
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
}

/// Entries the walk could not read and the manifest does not list: warnings (a listed
/// one is already an error).
fn note_unreadable(walked: &Walk, manifest: Option<&Manifest>, report: &mut VerifyReport) {
    for skip in &walked.skipped {
        let rel = skip.rel.to_string_lossy();
        let listed = manifest.is_some_and(|m| m.files.iter().any(|f| f.path == rel));
        if !listed {
            report.findings.push(Finding::warning(
                FindingKind::UnreadableFile,
                rel,
                skip.reason.clone(),
            ));
        }
    }
}

/// Reads every task in parallel, each file digested and inspected; a file whose entry
/// lists chunk digests is checked chunk by chunk on every core, unless whole-file
/// digests are wanted (signing, or a signature to check).
fn read_all(
    path: &Path,
    tasks: Vec<ToRead>,
    manifest: Option<&Manifest>,
    chunk_size: u64,
    options: &VerifyOptions<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<(ToRead, io::Result<Checked>)> {
    let whole_digests = options.collect_digests || options.digest_check.is_some();
    tasks
        .into_par_iter()
        .map(|task| {
            let ctx = FileContext {
                root: path,
                path: &task.rel,
                entry: task.expected.entry.as_ref(),
                manifest,
            };
            let file = path.join(&task.rel);
            let by_chunks = ctx
                .entry
                .filter(|_| !whole_digests)
                .and_then(|entry| chunked::usable_chunks(entry, task.size, chunk_size));
            let result = match by_chunks {
                Some(list) => chunked::read_chunked(
                    &file,
                    &ctx,
                    list,
                    chunk_size,
                    options.inspectors,
                    progress,
                )
                .map(|read| Checked {
                    digest: read.digest,
                    inspection: read.inspection,
                    bad_chunks: Some(read.bad),
                }),
                None => digest_file(&file, &ctx, chunk_size, false, options.inspectors, progress)
                    .map(|(digest, inspection)| Checked::whole(digest, inspection)),
            };
            (task, result)
        })
        .collect()
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
    let (digest, inspection) = digest_file(
        path,
        &ctx,
        DEFAULT_CHUNK_SIZE,
        false,
        options.inspectors,
        progress,
    )
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
