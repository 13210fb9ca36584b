//! Verifying a dataset that is not a local directory (an object store prefix) against
//! its manifest: every listed file present with its size and SHA-256 (a mismatch located
//! to its first differing chunk), nothing unlisted, the root digest and `SHA256SUMS`
//! consistent. Files are read once each, several at a time (the latency of a request is
//! hidden behind the others). The format inspectors are not run: they read neighbouring
//! files by path; a digest equal to the manifest's proves the bytes are those the
//! manifest was made from.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::compare::check_sums;
use super::judge::judge_manifest;
use super::options::VerifyOptions;
use super::report::VerifyReport;
use super::steps::{Checked, ToRead, conclude, listed_files, record_read, total_size};
use crate::tree::ListedTree;
use crate::{
    Digester, FileDigest, Finding, FindingKind, MANIFEST_FILE, Manifest, Result, SUMS_FILE, sums,
    unfinished,
};

/// Verifies `dataset` against its manifest with `concurrency` files read at once.
pub fn verify_listed(
    dataset: &dyn ListedTree,
    options: &VerifyOptions<'_>,
    concurrency: usize,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let shown = dataset.display();
    let manifest_path = Path::new(&shown).join(MANIFEST_FILE);
    let Some(bytes) = dataset.read_small(MANIFEST_FILE)? else {
        report.findings.push(no_manifest(dataset, shown)?);
        return Ok(report);
    };
    let (manifest, _) =
        judge_manifest(&bytes, &manifest_path, options, MANIFEST_FILE, &mut report)?;
    let Some(manifest) = manifest else {
        return Ok(report);
    };
    let present: BTreeMap<String, u64> = dataset.files()?.into_iter().collect();
    let sums = dataset
        .read_small(SUMS_FILE)?
        .map(|b| sums::parse(&String::from_utf8_lossy(&b)));
    if let Some(parsed) = &sums {
        check_sums(parsed, &manifest, &mut report);
    }
    let tasks = listed_files(&manifest, &present, &|_| None, &mut report);

    progress_total(total_size(&tasks));
    let results = read_all(dataset, &tasks, &manifest, concurrency, progress);
    let mut seen = Vec::with_capacity(results.len());
    for (i, result) in results {
        record_read(
            &mut report,
            &mut seen,
            options,
            &tasks[i],
            result.map(|digest| Checked::whole(digest, None)),
        );
    }
    conclude(
        &mut report,
        Path::new(&shown),
        options,
        &seen,
        Some(&manifest),
        sums.is_some(),
    );
    report.notes.push(
        "object store: every file's size and SHA-256 checked against the manifest; structure checks need a local copy (`shardsmith stage`)".into(),
    );
    Ok(report)
}

/// The finding for a dataset without a manifest: the unfinished run it holds, or the
/// missing manifest. A location with no files at all is an error: a bucket or prefix
/// that does not exist is not a dataset without a manifest.
fn no_manifest(dataset: &dyn ListedTree, shown: String) -> Result<Finding> {
    let run = dataset.read_small(unfinished::RUN_FILE)?;
    let leased = dataset.read_small(unfinished::LEASE_FILE)?.is_some();
    let unfinished = unfinished::Unfinished::from_state(None, run.as_deref(), leased);
    if unfinished.is_none() && dataset.files()?.is_empty() {
        return Err(crate::Error::Empty {
            location: shown,
            advice: "nothing to verify: the bucket or prefix does not exist, or the credentials cannot list it".into(),
        });
    }
    Ok(match unfinished {
        Some(u) => u.finding(),
        None => Finding::error(
            FindingKind::MissingFile,
            MANIFEST_FILE,
            "a dataset in an object store is verified against its manifest and there is none; `shardsmith stage` it to local disk and verify it there by its structure, or, if these files are the whole dataset, write one with `shardsmith manifest`",
        ),
    })
}

/// Digests every task with `concurrency` files streamed at once; the results by task
/// index, in order.
fn read_all(
    dataset: &dyn ListedTree,
    tasks: &[ToRead],
    manifest: &Manifest,
    concurrency: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<(usize, io::Result<FileDigest>)> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, io::Result<FileDigest>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..concurrency.clamp(1, tasks.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(task) = tasks.get(i) else { return };
                    let digest = dataset
                        .open(&task.rel)
                        .and_then(|reader| digest_stream(reader, manifest.chunk_size, progress));
                    results.lock().expect("no panic").push((i, digest));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("no panic");
    results.sort_by_key(|(i, _)| *i);
    results
}

/// The digest of one stream, read to its end.
fn digest_stream(
    mut reader: Box<dyn Read + Send>,
    chunk_size: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> io::Result<FileDigest> {
    let mut digester = Digester::new(chunk_size);
    let mut block = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut block) {
            Ok(0) => return Ok(digester.finish()),
            Ok(n) => {
                digester.update(&block[..n]);
                progress(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
