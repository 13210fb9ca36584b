//! `shardsmith verify PATH`: every check, one read per file, findings as data.

use std::time::Instant;

use anyhow::Result;
use shardsmith_inspect::{CheckpointOptions, InspectorsWith};
use shardsmith_manifest::verify::{VerifyOptions, verify_path};

use super::Status;
use crate::args::VerifyArgs;
use crate::output::{Printer, seconds};
use crate::report;
use crate::size::human_bytes;

pub fn run(args: &VerifyArgs, printer: &Printer) -> Result<Status> {
    let remote = match crate::storage::location(&args.path)? {
        shardsmith_store::Location::Remote(remote) => {
            if args.manifest.is_some() || args.signature.is_some() {
                anyhow::bail!(
                    "--manifest and --signature take a local dataset; `shardsmith stage` it first"
                );
            }
            Some(shardsmith_store::ObjectTree::new(remote))
        }
        shardsmith_store::Location::Local(_) => {
            crate::output::need_path(&args.path, "path")?;
            if let Ok(meta) = std::fs::metadata(&args.path)
                && !meta.is_dir()
                && !meta.is_file()
            {
                let shown = args.path.display().to_string();
                return Err(crate::output::CliError {
                    kind: "not_a_file",
                    message: format!(
                        "`{shown}` is neither a directory nor a regular file (a device, a FIFO or a socket): verify checks a dataset directory or one file"
                    ),
                    path: Some(shown),
                }
                .into());
            }
            if args.manifest.is_none()
                && args.signature.is_none()
                && super::hfcache::is_cache(&args.path)
            {
                return super::hfcache::verify(
                    &args.path,
                    args.expect_root.as_deref(),
                    args.allow_empty,
                    printer,
                );
            }
            None
        }
    };
    let started = Instant::now();
    let inspectors = InspectorsWith(CheckpointOptions {
        scan_values: args.scan_values,
    });
    // The key and the bundle are read before the data: a bad key fails at once.
    let signature = match (&args.signature, &args.public_key) {
        (Some(bundle), Some(key)) => Some(super::sign::SignatureCheck::new(bundle, key)?),
        _ => None,
    };
    let options = VerifyOptions {
        manifest: args.manifest.clone(),
        expect_root: args.expect_root.clone(),
        inspectors: &inspectors,
        allow_empty: args.allow_empty,
        collect_digests: false,
        digest_check: signature
            .as_ref()
            .map(|s| s as &dyn shardsmith_manifest::verify::DigestCheck),
    };
    let bar = printer.bytes_bar("verifying");
    let result = match &remote {
        Some(tree) => shardsmith_manifest::verify::verify_listed(
            tree,
            &options,
            tree.remote().io_concurrency().min(32),
            &|total| bar.set_total(total),
            &|n| bar.inc(n),
        ),
        None => verify_path(&args.path, &options, &|total| bar.set_total(total), &|n| {
            bar.inc(n)
        }),
    };
    bar.finish_and_clear();
    let report = result?;
    let signature = signature.and_then(super::sign::SignatureCheck::into_report);
    let elapsed = started.elapsed();
    let status = if report.errors() > 0 {
        Status::Problems
    } else {
        Status::Clean
    };

    let mut text = String::new();
    let against = match (&report.manifest, &report.root_sha256) {
        (Some(m), Some(root)) => format!(" against {m} (root {root})"),
        (Some(m), None) => format!(" ({m} unusable)"),
        _ => String::new(),
    };
    let rate = report.bytes_checked as f64 / elapsed.as_secs_f64().max(1e-9);
    text.push_str(&format!(
        "verified {}: {} files, {}{}{against} in {} ({}/s)\n",
        args.path.display(),
        report.files_checked,
        human_bytes(report.bytes_checked),
        counts(&report),
        seconds(elapsed),
        human_bytes(rate as u64),
    ));
    text.push_str(&coverage_lines(&report));
    if let Some(sig) = &signature {
        text.push_str(&super::sign::signature_line(sig));
    }
    for note in &report.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    for finding in &report.findings {
        let tag = if finding.is_error() {
            "error"
        } else {
            "warning"
        };
        text.push_str(&format!("{tag}: {finding}\n"));
    }
    text.push_str(&match status {
        Status::Clean if report.warnings() > 0 => {
            format!("OK with {} warning(s)\n", report.warnings())
        }
        Status::Clean => "OK: no problems found\n".to_string(),
        Status::Problems => format!(
            "FAILED: {} problem(s), {} warning(s)\n",
            report.errors(),
            report.warnings()
        ),
    });
    printer.summary(&text);
    printer.report(&report::Verify {
        bytes_checked: report.bytes_checked,
        checked: &report.checked,
        command: "verify",
        documents: report.documents,
        errors: report.errors(),
        files_checked: report.files_checked,
        findings: &report.findings,
        manifest: report.manifest.as_deref(),
        notes: &report.notes,
        ok: status == Status::Clean,
        path: args.path.display().to_string(),
        root_sha256: report.root_sha256.as_deref(),
        samples: report.samples,
        seconds: elapsed.as_secs_f64(),
        signature: signature.as_ref(),
        tokens: report.tokens,
        version: report::VERSION,
        warnings: report.warnings(),
    });
    Ok(status)
}

/// `, 120 samples`, `, 9677 documents, 23973863 tokens`: the counts that apply.
fn counts(report: &shardsmith_manifest::verify::VerifyReport) -> String {
    let mut out = String::new();
    for (n, what) in [
        (report.samples, "samples"),
        (report.documents, "documents"),
        (report.tokens, "tokens"),
    ] {
        if n > 0 {
            out.push_str(&format!(", {n} {what}"));
        }
    }
    out
}

/// What the files were checked against, and what was only read.
fn coverage_lines(report: &shardsmith_manifest::verify::VerifyReport) -> String {
    let c = &report.checked;
    let mut digests = Vec::new();
    if c.manifest > 0 {
        digests.push(format!(
            "{} against the manifest (size and SHA-256)",
            c.manifest
        ));
    }
    if c.sums > 0 {
        digests.push(format!("{} against SHA256SUMS", c.sums));
    }
    if c.signature > 0 {
        digests.push(format!("{} against the signature", c.signature));
    }
    if digests.is_empty() {
        digests.push("none (no digest recorded for any file)".into());
    }
    let mut out = format!("  digests    {}\n", digests.join(", "));
    out.push_str(&format!(
        "  structure  {} file(s) of a known format walked\n",
        c.structure
    ));
    if c.unchecked > 0 {
        let shown: Vec<String> = c
            .unchecked_examples
            .iter()
            .map(|e| format!("`{e}`"))
            .collect();
        out.push_str(&format!(
            "  unchecked  {} file(s) only read: no recorded digest, no known format ({}{})\n",
            c.unchecked,
            shown.join(", "),
            if c.unchecked > shown.len() as u64 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    out
}
