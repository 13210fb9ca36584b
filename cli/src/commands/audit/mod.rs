//! `shardsmith audit RUN_DIR`: every checkpoint of a run verified, the newest intact one
//! named, pointer files checked. A run in an object store is surveyed from its listing
//! ([`remote`]).

mod remote;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;
use shardsmith_checkpoint::audit::{audit_listed, audit_run};
use shardsmith_inspect::{CheckpointOptions, InspectorsWith};

use super::Status;
use crate::args::AuditArgs;
use crate::output::{Printer, seconds};
use crate::report;
use crate::size::human_bytes;

pub fn run(args: &AuditArgs, printer: &Printer) -> Result<Status> {
    let location = crate::storage::location(&args.run_dir)?;
    if let shardsmith_store::Location::Local(_) = &location {
        crate::output::need_directory(&args.run_dir)?;
        if super::hfcache::is_cache(&args.run_dir) {
            return super::hfcache::audit(&args.run_dir, printer);
        }
    }
    let started = Instant::now();
    let bar = printer.bytes_bar("auditing");
    let total = AtomicU64::new(0);
    let inspectors = InspectorsWith(CheckpointOptions {
        scan_values: args.scan_values,
    });
    let scratch = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let mut copied = None;
    let result = match location {
        shardsmith_store::Location::Local(_) => audit_run(
            &args.run_dir,
            &inspectors,
            &|n| bar.set_total(total.fetch_add(n, Ordering::Relaxed) + n),
            &|n| bar.inc(n),
        ),
        shardsmith_store::Location::Remote(remote) => {
            crate::output::need_directory(&scratch)?;
            let run = remote::RemoteRun {
                tree: shardsmith_store::ObjectTree::new(remote),
                scratch: &scratch,
                inspectors: &inspectors,
                copied: AtomicU64::new(0),
                copies: AtomicU64::new(0),
            };
            let result = audit_listed(&run, &|n| bar.set_total(n), &|n| bar.inc(n));
            copied = Some((
                run.copies.load(Ordering::Relaxed),
                run.copied.load(Ordering::Relaxed),
            ));
            result
        }
    };
    bar.finish_and_clear();
    let report = result?;
    if report.checkpoints.is_empty() {
        return Err(crate::output::fail(
            "not_found",
            args.run_dir.display(),
            format!(
                "no checkpoint found in `{}` (expected subdirectories such as global_step10/, iter_0000010/, checkpoint-500/, or files such as *.pt, *.safetensors)",
                args.run_dir.display()
            ),
        ));
    }
    let elapsed = started.elapsed();
    let status = if report.ok() {
        Status::Clean
    } else {
        Status::Problems
    };
    let bytes: u64 = report.checkpoints.iter().map(|c| c.bytes_checked).sum();
    let intact = report.checkpoints.iter().filter(|c| c.intact).count();
    let mut text = format!(
        "audited {}: {} checkpoint(s), {intact} intact, {} in {}\n",
        args.run_dir.display(),
        report.checkpoints.len(),
        human_bytes(bytes),
        seconds(elapsed),
    );
    if let Some((copies, bytes)) = copied.filter(|&(n, _)| n > 0) {
        text.push_str(&format!(
            "  {copies} checkpoint(s) without a manifest copied to {} to be checked ({}), then deleted\n",
            scratch.display(),
            human_bytes(bytes),
        ));
    }
    let width = report
        .checkpoints
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0);
    for c in &report.checkpoints {
        let state = if c.intact { "intact" } else { "BROKEN" };
        let detail = match (c.errors, c.warnings) {
            (0, 0) => String::new(),
            (0, w) => format!(", {w} warning(s)"),
            (e, w) => format!(", {e} error(s), {w} warning(s)"),
        };
        let against = if c.manifest.is_some() {
            ", against its manifest"
        } else {
            ""
        };
        text.push_str(&format!(
            "  {:<width$}  {state}  {} files, {}{against}{detail}\n",
            c.name,
            c.files_checked,
            human_bytes(c.bytes_checked),
        ));
        let shown = if printer.verbose() { usize::MAX } else { 5 };
        for f in c
            .findings
            .iter()
            .filter(|f| f.is_error() || printer.verbose())
            .take(shown)
        {
            let tag = if f.is_error() { "error" } else { "warning" };
            text.push_str(&format!("      {tag}: {f}\n"));
        }
        let hidden = c
            .findings
            .iter()
            .filter(|f| f.is_error())
            .count()
            .saturating_sub(shown);
        if hidden > 0 {
            text.push_str(&format!(
                "      ... {hidden} more error(s) (-v or --json for all)\n"
            ));
        }
    }
    for f in &report.findings {
        let tag = if f.is_error() { "error" } else { "warning" };
        text.push_str(&format!("{tag}: {f}\n"));
    }
    let resume = report.newest_intact.as_ref().map(|n| args.run_dir.join(n));
    match (&resume, status) {
        (Some(path), Status::Clean) => {
            text.push_str(&format!("OK: resume from {}\n", path.display()));
        }
        (Some(path), Status::Problems) => text.push_str(&format!(
            "FAILED: the newest checkpoint is {}; the newest intact one is {}\n",
            if report.newest == report.newest_intact {
                "intact but a pointer is wrong".to_string()
            } else {
                format!(
                    "`{}`, which is broken",
                    report.newest.as_deref().unwrap_or("?")
                )
            },
            path.display()
        )),
        (None, _) => text.push_str("FAILED: no checkpoint of the run is intact\n"),
    }
    printer.summary(&text);
    printer.report(&report::Audit {
        bytes_checked: bytes,
        checkpoints: &report.checkpoints,
        command: "audit",
        findings: &report.findings,
        newest: report.newest.as_deref(),
        newest_intact: report.newest_intact.as_deref(),
        ok: status == Status::Clean,
        resume_from: resume.map(|p| p.display().to_string()),
        run_dir: args.run_dir.display().to_string(),
        seconds: elapsed.as_secs_f64(),
        version: report::VERSION,
    });
    Ok(status)
}
