//! `verify` and `audit` of a Hugging Face hub cache (`~/.cache/huggingface/hub`, or one
//! `models--org--name` directory): the checks are `shardsmith_checkpoint::hfcache`'s;
//! this renders them as `verify` and `audit` render theirs.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};
use shardsmith_checkpoint::hfcache::{CacheReport, verify_cache};
use shardsmith_manifest::Finding;

use super::Status;
use crate::output::{Printer, seconds};
use crate::report;
use crate::size::human_bytes;

/// True when `path` is a local hub cache or one repository of it.
pub fn is_cache(path: &Path) -> bool {
    shardsmith_checkpoint::hfcache::cache_repos(path).is_some()
}

fn check(path: &Path, printer: &Printer, what: &str) -> Result<CacheReport> {
    let bar = printer.bytes_bar(what);
    let report = verify_cache(path, &|total| bar.set_total(total), &|n| bar.inc(n));
    bar.finish_and_clear();
    match report {
        Some(report) => Ok(report),
        None => Err(crate::output::fail(
            "bad_input",
            path.display(),
            format!("`{}` is not a Hugging Face cache", path.display()),
        )),
    }
}

fn tag(f: &Finding) -> &'static str {
    if f.is_error() { "error" } else { "warning" }
}

/// `verify CACHE`: every blob against its name, every snapshot link, every ref.
pub fn verify(
    path: &Path,
    expect_root: Option<&str>,
    allow_empty: bool,
    printer: &Printer,
) -> Result<Status> {
    if expect_root.is_some() {
        bail!("--expect-root takes a dataset with a manifest; a Hugging Face cache has none");
    }
    let started = Instant::now();
    let report = check(path, printer, "verifying")?;
    let elapsed = started.elapsed();
    let verified = report.verify_report(allow_empty);
    let errors = verified.errors();
    let warnings = verified.warnings();
    let status = if errors > 0 {
        Status::Problems
    } else {
        Status::Clean
    };
    let snapshots: usize = report.repos.iter().map(|r| r.snapshots.len()).sum();
    let rate = report.bytes_checked as f64 / elapsed.as_secs_f64().max(1e-9);
    let mut text = format!(
        "verified {} (Hugging Face cache): {} repo(s), {snapshots} snapshot(s), {} blobs, {} in {} ({}/s)\n",
        path.display(),
        report.repos.len(),
        report.blobs_checked,
        human_bytes(report.bytes_checked),
        seconds(elapsed),
        human_bytes(rate as u64),
    );
    text.push_str(&format!(
        "  digests    {} blob(s) against their names (SHA-256, git blob SHA-1)\n",
        report.blobs_checked
    ));
    text.push_str(&format!(
        "  links      {} snapshot symlink(s) resolved, {} ref(s) read\n",
        report.links_checked, report.refs_checked
    ));
    if let Some(copies) = report.copies_note() {
        text.push_str(&format!("  unchecked  {copies}\n"));
    }
    for finding in &verified.findings {
        text.push_str(&format!("{}: {finding}\n", tag(finding)));
    }
    text.push_str(&match status {
        Status::Clean if warnings > 0 => format!("OK with {warnings} warning(s)\n"),
        Status::Clean => "OK: no problems found\n".to_string(),
        Status::Problems => format!("FAILED: {errors} problem(s), {warnings} warning(s)\n"),
    });
    printer.summary(&text);
    printer.report(&report::Verify {
        bytes_checked: verified.bytes_checked,
        checked: &verified.checked,
        command: "verify",
        documents: 0,
        errors,
        files_checked: verified.files_checked,
        findings: &verified.findings,
        manifest: None,
        notes: &verified.notes,
        ok: status == Status::Clean,
        path: path.display().to_string(),
        root_sha256: None,
        samples: 0,
        seconds: elapsed.as_secs_f64(),
        signature: None,
        tokens: 0,
        version: report::VERSION,
        warnings,
    });
    Ok(status)
}

/// `audit CACHE`: one line per repository and snapshot, intact or broken.
pub fn audit(path: &Path, printer: &Printer) -> Result<Status> {
    let started = Instant::now();
    let report = check(path, printer, "auditing")?;
    let elapsed = started.elapsed();
    let findings = report.findings();
    let ok = report.referenced_intact();
    let status = if ok { Status::Clean } else { Status::Problems };
    let snapshots: Vec<_> = report
        .repos
        .iter()
        .flat_map(|r| r.snapshots.iter().map(move |s| (r, s)))
        .collect();
    let intact = snapshots.iter().filter(|(_, s)| s.intact).count();
    let mut text = format!(
        "audited {} (Hugging Face cache): {} repo(s), {} snapshot(s), {intact} intact, {} in {}\n",
        path.display(),
        report.repos.len(),
        snapshots.len(),
        human_bytes(report.bytes_checked),
        seconds(elapsed),
    );
    let refs = |refs: &[String]| {
        if refs.is_empty() {
            "-".to_string()
        } else {
            refs.join(",")
        }
    };
    let repo_width = snapshots
        .iter()
        .map(|(r, _)| r.repo.len())
        .max()
        .unwrap_or(0);
    let refs_width = snapshots
        .iter()
        .map(|(_, s)| refs(&s.refs).len())
        .max()
        .unwrap_or(0);
    let shown = if printer.verbose() { usize::MAX } else { 5 };
    for (repo, s) in &snapshots {
        let state = if s.intact { "intact" } else { "BROKEN" };
        let detail = match s.findings.len() {
            0 => String::new(),
            n => format!(" ({n} finding(s))"),
        };
        text.push_str(&format!(
            "  {:<repo_width$}  {}  refs: {:<refs_width$}  {state}{detail}\n",
            repo.repo,
            s.commit.get(..12).unwrap_or(&s.commit),
            refs(&s.refs),
        ));
        for f in s
            .findings
            .iter()
            .filter(|f| f.is_error() || printer.verbose())
            .take(shown)
        {
            text.push_str(&format!("      {}: {f}\n", tag(f)));
        }
        let hidden = s.errors.saturating_sub(shown);
        if hidden > 0 {
            text.push_str(&format!(
                "      ... {hidden} more error(s) (-v or --json for all)\n"
            ));
        }
    }
    // Findings no snapshot carries: refs, blobs no snapshot links to, leftovers.
    for f in findings.iter().filter(|f| {
        !snapshots
            .iter()
            .any(|(_, s)| s.findings.iter().any(|g| g == *f))
    }) {
        if f.is_error() || printer.verbose() {
            text.push_str(&format!("{}: {f}\n", tag(f)));
        }
    }
    text.push_str(if ok {
        "OK: every snapshot a ref names is intact\n"
    } else {
        "FAILED: a snapshot a ref names is broken or missing\n"
    });
    printer.summary(&text);
    printer.report(&report::HfCacheAudit {
        bytes_checked: report.bytes_checked,
        command: "audit",
        findings: &findings,
        ok,
        path: path.display().to_string(),
        repos: &report.repos,
        seconds: elapsed.as_secs_f64(),
        version: report::VERSION,
    });
    Ok(status)
}
