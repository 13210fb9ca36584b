//! Checking a directory (or one file) against its manifest, reading every file once.
//!
//! With a manifest: every listed file present with the recorded size and SHA-256 (a
//! mismatch is located to its first differing chunk through the chunk CRCs), nothing
//! unlisted, the root digest consistent (and equal to a pinned value), `SHA256SUMS`
//! consistent, and each file's inspector (a tar walker, ...) clean with the recorded
//! sample count and keys. Without one: every file's inspector, `SHA256SUMS` when present,
//! and gaps in numbered shard sequences.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::digest::parse_chunks;
use crate::scan::{FileRead, digest_file};
use crate::walk::{self, rel_string};
use crate::{
    DEFAULT_CHUNK_SIZE, Error, FileContext, FileDigest, FileEntry, Finding, FindingKind,
    Inspection, InspectorFactory, MANIFEST_FILE, Manifest, Result, SUMS_FILE, TEMP_PREFIX,
    root_digest, sums,
};

/// How to verify.
pub struct VerifyOptions<'a> {
    /// Manifest to use instead of `DIR/manifest.json`.
    pub manifest: Option<PathBuf>,
    /// Root digest the manifest must have (catches a replaced manifest).
    pub expect_root: Option<String>,
    /// Structural checkers.
    pub inspectors: &'a dyn InspectorFactory,
}

/// The outcome of a verification: what was checked and every finding.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// Manifest used, if any.
    pub manifest: Option<String>,
    /// Root digest recomputed from the manifest, if any.
    pub root_sha256: Option<String>,
    /// Files read.
    pub files_checked: u64,
    /// Bytes read.
    pub bytes_checked: u64,
    /// Samples counted by the inspectors.
    pub samples: u64,
    /// Everything found, sorted by file and offset.
    pub findings: Vec<Finding>,
    /// Remarks on what could not be checked.
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// Number of error-severity findings.
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.is_error()).count()
    }

    /// Number of warnings.
    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }
}

/// What one file is expected to be.
#[derive(Clone, Debug, Default)]
struct Expected {
    entry: Option<FileEntry>,
    sha256: Option<String>,
}

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
    let manifest = load_manifest(&manifest_path, options, &manifest_display, &mut report)?;
    let own_manifest = manifest_path
        .strip_prefix(path)
        .ok()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(MANIFEST_FILE));
    let walked = walk::walk(path, &|rel, _| {
        rel != own_manifest && rel != Path::new(SUMS_FILE)
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
            } else {
                report.notes.push(
                    "no manifest: files were checked structurally only; run `shardsmith manifest` when the data is written to make verification exact".into(),
                );
            }
            for (rel, &size) in &present {
                if is_temp(rel) {
                    report.findings.push(unlisted_finding(rel));
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
    for (rel, expected, result) in results {
        match result {
            Ok((digest, inspection)) => {
                report.files_checked += 1;
                report.bytes_checked += digest.size;
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
    report
        .findings
        .sort_by(|a, b| (&a.path, a.offset, a.kind).cmp(&(&b.path, b.offset, b.kind)));
    Ok(report)
}

fn load_manifest(
    manifest_path: &Path,
    options: &VerifyOptions<'_>,
    display: &str,
    report: &mut VerifyReport,
) -> Result<Option<Manifest>> {
    let bytes = match std::fs::read(manifest_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound && options.manifest.is_none() => {
            if options.expect_root.is_some() {
                report.findings.push(Finding::error(
                    FindingKind::MissingFile,
                    display,
                    "--expect-root was given but there is no manifest",
                ));
            }
            return Ok(None);
        }
        Err(e) => return Err(Error::io("reading manifest", manifest_path, e)),
    };
    report.manifest = Some(display.to_string());
    match Manifest::parse(&bytes, manifest_path) {
        Ok((manifest, value)) => {
            let computed = root_digest(&value);
            if manifest.root_sha256 != computed {
                report.findings.push(
                    Finding::error(
                        FindingKind::RootMismatch,
                        display,
                        "manifest content does not match its root_sha256: it was edited or damaged",
                    )
                    .values(&manifest.root_sha256, &computed),
                );
            }
            if let Some(pinned) = &options.expect_root
                && !pinned.eq_ignore_ascii_case(&computed)
            {
                report.findings.push(
                    Finding::error(
                        FindingKind::RootMismatch,
                        display,
                        "manifest root digest differs from --expect-root: this is not the pinned dataset",
                    )
                    .values(pinned.to_ascii_lowercase(), &computed),
                );
            }
            report.root_sha256 = Some(computed);
            Ok(Some(manifest))
        }
        Err(e) => {
            let reason = match e {
                Error::BadManifest { reason, .. } => reason,
                other => other.to_string(),
            };
            report.findings.push(Finding::error(
                FindingKind::ManifestInvalid,
                display,
                format!("{reason}; files were checked structurally only"),
            ));
            Ok(None)
        }
    }
}

fn is_temp(rel: &str) -> bool {
    rel.split('/').any(|part| part.starts_with(TEMP_PREFIX))
}

fn unlisted_finding(rel: &str) -> Finding {
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

fn check_sums(
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
fn compare(
    rel: &str,
    expected: &Expected,
    digest: &FileDigest,
    inspection: Option<Inspection>,
    report: &mut VerifyReport,
) -> Option<Inspection> {
    let entry = expected.entry.as_ref();
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
    if let Some(sha) = &expected.sha256
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
    {
        report.samples += inspection.samples.unwrap_or(0);
        if let Some(entry) = entry {
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
            }
            // Keys that differ because samples are missing add nothing to that finding.
            for (which, want, got) in [
                ("first", &entry.first_key, &inspection.first_key),
                ("last", &entry.last_key, &inspection.last_key),
            ] {
                if let (Some(want), Some(got)) = (want, got)
                    && want != got
                    && !count_differs
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
        report.findings.append(&mut inspection.findings);
    }
    Some(inspection)
}

/// Narrows a hash mismatch to the first chunk whose CRC differs.
fn locate(finding: Finding, expected: &[u32], expected_size: u64, digest: &FileDigest) -> Finding {
    let chunk = digest.chunk_size;
    let common = expected.len().min(digest.chunk_crc32.len());
    let differing: Vec<usize> = (0..common)
        .filter(|&i| {
            let full_in_both = (i as u64 + 1) * chunk <= expected_size.min(digest.size);
            expected[i] != digest.chunk_crc32[i] || !full_in_both && expected_size != digest.size
        })
        .collect();
    let first = differing.first().copied().unwrap_or(common);
    let start = first as u64 * chunk;
    let end = ((first as u64 + 1) * chunk).min(expected_size.max(digest.size));
    let count = differing.len() + expected.len().max(digest.chunk_crc32.len()) - common;
    let total = expected.len().max(digest.chunk_crc32.len());
    let message = format!(
        "SHA-256 differs from the manifest: {count} of {total} chunk(s) of {} differ; the range shown is the first",
        human_chunk(chunk)
    );
    Finding { message, ..finding }.range(start, end)
}

fn human_chunk(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
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
    match &inspection {
        Some(_) => report.notes.push(
            "single file: structure checked; verify its directory to compare with the manifest"
                .into(),
        ),
        None => report.notes.push(format!(
            "single file of no known format: only read (SHA-256 {})",
            digest.sha256_hex()
        )),
    }
    if let Some(inspection) = inspection {
        report.samples = inspection.samples.unwrap_or(0);
        report.findings = inspection.findings;
    }
    Ok(report)
}

/// Reports gaps in numbered sequences like `shard-000000.tar .. shard-000009.tar` or
/// `shard.00000.mds ..`: a missing middle shard is otherwise invisible without a manifest.
fn sequence_gaps<'a>(paths: impl Iterator<Item = &'a String>, findings: &mut Vec<Finding>) {
    let paths: Vec<&String> = paths.collect();
    let indexed_dirs: BTreeSet<&str> = paths
        .iter()
        .filter_map(|p| {
            p.strip_suffix("index.json")
                .filter(|d| d.is_empty() || d.ends_with('/'))
        })
        .collect();
    let mut groups: BTreeMap<(String, String, usize), BTreeSet<u64>> = BTreeMap::new();
    for path in paths {
        let dir = path.rfind('/').map_or("", |i| &path[..=i]);
        if indexed_dirs.contains(dir) {
            continue; // a dataset index says which shards belong; it is checked instead
        }
        let Some((stem, ext)) = path.rsplit_once('.') else {
            continue;
        };
        let digits = stem.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits < 4 || digits == stem.len() {
            continue;
        }
        let (prefix, number) = stem.split_at(stem.len() - digits);
        if !prefix.ends_with(['-', '_', '.']) {
            continue;
        }
        if let Ok(n) = number.parse::<u64>() {
            groups
                .entry((prefix.to_string(), ext.to_string(), digits))
                .or_default()
                .insert(n);
        }
    }
    for ((prefix, ext, width), numbers) in groups {
        let (Some(&low), Some(&high)) = (numbers.first(), numbers.last()) else {
            continue;
        };
        if numbers.len() < 2 || high - low + 1 == numbers.len() as u64 {
            continue;
        }
        let name = |n: u64| format!("{prefix}{n:0width$}.{ext}");
        let mut n = low;
        while n < high {
            if numbers.contains(&n) {
                n += 1;
                continue;
            }
            let run_end = numbers.range(n..).next().copied().unwrap_or(high);
            let count = run_end - n;
            let message = if count == 1 {
                format!("gap in the shard sequence {}..{}", name(low), name(high))
            } else {
                format!(
                    "{count} shards missing from the sequence, {}..{} (or the highest numbers are stale extras)",
                    name(n),
                    name(run_end - 1)
                )
            };
            findings.push(Finding::error(FindingKind::MissingFile, name(n), message));
            n = run_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoInspection;
    use crate::scan::scan_directory;

    fn options() -> VerifyOptions<'static> {
        VerifyOptions {
            manifest: None,
            expect_root: None,
            inspectors: &NoInspection,
        }
    }

    fn dataset() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), vec![1u8; 3 << 20]).unwrap();
        std::fs::write(dir.path().join("b.bin"), b"bee").unwrap();
        let scan = scan_directory(dir.path(), &NoInspection, &|_| {}, &|_| {}).unwrap();
        std::fs::write(
            dir.path().join(MANIFEST_FILE),
            scan.manifest.to_json_bytes(),
        )
        .unwrap();
        std::fs::write(
            dir.path().join(SUMS_FILE),
            sums::render(&scan.manifest.files),
        )
        .unwrap();
        dir
    }

    fn kinds(report: &VerifyReport) -> Vec<(FindingKind, String, Option<u64>)> {
        report
            .findings
            .iter()
            .map(|f| (f.kind, f.path.clone(), f.offset))
            .collect()
    }

    #[test]
    fn clean_dataset_has_no_findings() {
        let dir = dataset();
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        assert_eq!(report.files_checked, 2);
    }

    #[test]
    fn flipped_byte_is_located_to_its_chunk() {
        let dir = dataset();
        let path = dir.path().join("a.bin");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[(2 << 20) + 5] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert_eq!(
            kinds(&report),
            vec![(FindingKind::HashMismatch, "a.bin".into(), Some(2 << 20))]
        );
        assert_eq!(report.findings[0].end, Some(3 << 20));
    }

    #[test]
    fn truncation_missing_extra_and_temp_files() {
        let dir = dataset();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("a.bin"))
            .unwrap();
        f.set_len(1 << 20).unwrap();
        std::fs::remove_file(dir.path().join("b.bin")).unwrap();
        std::fs::write(dir.path().join("c.bin"), b"extra").unwrap();
        std::fs::write(dir.path().join(".shardsmith-tmp-x"), b"t").unwrap();
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        let found = kinds(&report);
        assert!(
            found.contains(&(FindingKind::SizeMismatch, "a.bin".into(), Some(1 << 20))),
            "{found:?}"
        );
        assert!(
            found.contains(&(FindingKind::HashMismatch, "a.bin".into(), Some(1 << 20))),
            "{found:?}"
        );
        assert!(found.contains(&(FindingKind::MissingFile, "b.bin".into(), None)));
        assert!(found.contains(&(FindingKind::UnlistedFile, "c.bin".into(), None)));
        assert!(found.contains(&(
            FindingKind::LeftoverTempFile,
            ".shardsmith-tmp-x".into(),
            None
        )));
        assert_eq!(report.warnings(), 1);
    }

    #[test]
    fn edited_manifest_and_pinned_root() {
        let dir = dataset();
        let manifest_path = dir.path().join(MANIFEST_FILE);
        let (m, _) = Manifest::load(&manifest_path).unwrap();
        let text = std::fs::read_to_string(&manifest_path)
            .unwrap()
            .replace(&m.files[1].sha256, &"0".repeat(64));
        std::fs::write(&manifest_path, text).unwrap();
        let mut opts = options();
        opts.expect_root = Some(m.root_sha256.clone());
        let report = verify_path(dir.path(), &opts, &|_| {}, &|_| {}).unwrap();
        let found: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            found
                .iter()
                .filter(|k| **k == FindingKind::RootMismatch)
                .count(),
            2,
            "{found:?}"
        );
        assert!(found.contains(&FindingKind::HashMismatch));
        assert!(found.contains(&FindingKind::SumsMismatch));
    }

    #[test]
    fn without_manifest_sums_are_used_and_gaps_found() {
        let dir = tempfile::tempdir().unwrap();
        for i in [0, 1, 3] {
            std::fs::write(dir.path().join(format!("shard-{i:06}.tar")), b"x").unwrap();
        }
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert_eq!(
            kinds(&report),
            vec![(FindingKind::MissingFile, "shard-000002.tar".into(), None)]
        );
        let good = dataset();
        std::fs::remove_file(good.path().join(MANIFEST_FILE)).unwrap();
        std::fs::write(good.path().join("b.bin"), b"bed").unwrap();
        let report = verify_path(good.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert_eq!(
            kinds(&report),
            vec![(FindingKind::HashMismatch, "b.bin".into(), None)]
        );
    }

    #[test]
    fn unparseable_manifest_is_a_finding() {
        let dir = dataset();
        std::fs::write(dir.path().join(MANIFEST_FILE), b"{not json").unwrap();
        let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::ManifestInvalid)
        );
    }
}
