//! `shardsmith manifest DIR`: hash an existing directory into manifest.json + SHA256SUMS.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use shardsmith_inspect::Inspectors;
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_manifest::scan::scan_directory;

use super::Status;
use crate::args::ManifestArgs;
use crate::output::{Printer, seconds};
use crate::report;
use crate::size::human_bytes;

pub fn run(args: &ManifestArgs, printer: &Printer) -> Result<Status> {
    if let shardsmith_store::Location::Remote(remote) = crate::storage::location(&args.dir)? {
        return run_remote(args, remote, printer);
    }
    crate::output::need_directory(&args.dir)?;
    if !args.accept_unfinished
        && let Some(run) = shardsmith_manifest::unfinished::in_directory(&args.dir)
    {
        return Err(unfinished(args.dir.display().to_string(), &run).into());
    }
    let target = args
        .output
        .clone()
        .unwrap_or_else(|| args.dir.join(MANIFEST_FILE));
    if target.exists() && !args.force {
        return Err(crate::output::fail(
            "output_conflict",
            target.display(),
            format!(
                "`{}` already exists; use --force to replace it (or `shardsmith verify {}` to check against it)",
                target.display(),
                args.dir.display()
            ),
        ));
    }
    let started = Instant::now();
    let bar = printer.bytes_bar("hashing");
    let read = AtomicU64::new(0);
    let scan = scan_directory(
        &args.dir,
        &Inspectors,
        &|total| bar.set_total(total),
        &|n| {
            read.fetch_add(n, Ordering::Relaxed);
            bar.inc(n);
        },
    );
    bar.finish_and_clear();
    let mut scan = scan?;
    let mut not_recorded = Vec::new();
    if args.tensors {
        not_recorded =
            shardsmith_checkpoint::tensors::recorded::record(&args.dir, &mut scan.manifest)?;
    }
    let manifest = &scan.manifest;
    shardsmith_manifest::scan::write_directory_manifest(
        &args.dir,
        args.output.as_deref(),
        manifest,
    )?;
    let elapsed = started.elapsed();
    for finding in &scan.findings {
        printer.warn(&finding.to_string());
    }
    for skip in &manifest.skipped {
        printer.warn(&format!("left out `{}`: {}", skip.path, skip.reason));
    }
    for file in &not_recorded {
        printer.warn(&format!(
            "tensors of `{}` not recorded: {}",
            file.path, file.reason
        ));
    }
    let rate = manifest.totals.bytes as f64 / elapsed.as_secs_f64().max(1e-9);
    let mut text = format!(
        "wrote {}: {} files, {} in {} ({}/s)\n  root      {}\n",
        target.display(),
        manifest.totals.files,
        human_bytes(manifest.totals.bytes),
        seconds(elapsed),
        human_bytes(rate as u64),
        manifest.root_sha256
    );
    if let Some(samples) = manifest.totals.samples {
        text.push_str(&format!("  samples   {samples} (tar shards walked)\n"));
    }
    if args.tensors {
        let files = manifest
            .files
            .iter()
            .filter(|f| !f.tensors.is_empty())
            .count();
        let tensors: usize = manifest.files.iter().map(|f| f.tensors.len()).sum();
        text.push_str(&format!(
            "  tensors   {tensors} in {files} checkpoint file(s), each with the SHA-256 of its canonical form\n"
        ));
    }
    printer.summary(&text);
    printer.report(&report::Manifest {
        bytes: manifest.totals.bytes,
        command: "manifest",
        files: manifest.totals.files,
        manifest: target.display().to_string(),
        root_sha256: &manifest.root_sha256,
        samples: manifest.totals.samples,
        seconds: elapsed.as_secs_f64(),
        skipped: &manifest.skipped,
        tensors: args
            .tensors
            .then(|| manifest.files.iter().map(|f| f.tensors.len() as u64).sum()),
        version: report::VERSION,
        warnings: &scan.findings,
    });
    Ok(Status::Clean)
}

/// `manifest s3://...`: every object hashed as it streams, `SHA256SUMS` and
/// `manifest.json` written to the prefix (or the manifest to a local --output).
fn run_remote(
    args: &ManifestArgs,
    remote: std::sync::Arc<shardsmith_store::object::Remote>,
    printer: &Printer,
) -> Result<Status> {
    use shardsmith_store::{ObjectDir, ObjectTree, OutputSink};
    if args.tensors {
        bail!(
            "--tensors reads checkpoint files at random: run it on a local copy (`shardsmith stage {} DIR`)",
            remote.url("")
        );
    }
    let started = Instant::now();
    let dir = ObjectDir::new(remote.clone());
    let target = match &args.output {
        Some(path) => path.display().to_string(),
        None => remote.url(MANIFEST_FILE),
    };
    let exists = match &args.output {
        Some(path) => path.exists(),
        None => dir.size(MANIFEST_FILE)?.is_some(),
    };
    if exists && !args.force {
        return Err(crate::output::fail(
            "output_conflict",
            &target,
            format!(
                "`{target}` already exists; use --force to replace it (or `shardsmith verify {}` to check against it)",
                remote.url("")
            ),
        ));
    }
    if !args.accept_unfinished && !exists {
        let names = dir
            .child(shardsmith_manifest::unfinished::STATE_DIR)?
            .list()?;
        let run = dir.read(shardsmith_manifest::unfinished::RUN_FILE)?;
        let leased = dir
            .size(shardsmith_manifest::unfinished::LEASE_FILE)?
            .is_some();
        if let Some(run) = shardsmith_manifest::unfinished::Unfinished::from_state(
            Some(&names),
            run.as_deref(),
            leased,
        ) {
            return Err(unfinished(remote.url(""), &run).into());
        }
    }
    let tree = ObjectTree::new(remote.clone());
    let bar = printer.bytes_bar("hashing");
    let result = shardsmith_store::digest_all::manifest_of(
        &tree,
        remote.io_concurrency().min(32),
        &|total| bar.set_total(total),
        &|n| bar.inc(n),
    );
    bar.finish_and_clear();
    let manifest = result?;
    match &args.output {
        // Atomically, as every manifest is written: never half of one at `path`.
        Some(path) => shardsmith_manifest::scan::write_atomic(path, &manifest.to_json_bytes())
            .with_context(|| format!("writing `{}`", path.display()))?,
        None => shardsmith_manifest::commit(
            &manifest.files,
            &manifest.to_json_bytes(),
            |name, bytes| dir.write_atomic(name, bytes),
        )?,
    }
    let elapsed = started.elapsed();
    let rate = manifest.totals.bytes as f64 / elapsed.as_secs_f64().max(1e-9);
    printer.summary(&format!(
        "wrote {target}: {} files, {} in {} ({}/s)\n  root      {}\n",
        manifest.totals.files,
        human_bytes(manifest.totals.bytes),
        seconds(elapsed),
        human_bytes(rate as u64),
        manifest.root_sha256
    ));
    printer.report(&report::Manifest {
        bytes: manifest.totals.bytes,
        command: "manifest",
        files: manifest.totals.files,
        manifest: target,
        root_sha256: &manifest.root_sha256,
        samples: manifest.totals.samples,
        seconds: elapsed.as_secs_f64(),
        skipped: &manifest.skipped,
        tensors: None,
        version: report::VERSION,
        warnings: &[],
    });
    Ok(Status::Clean)
}

/// The refusal to describe part of a dataset as a whole one.
fn unfinished(
    location: String,
    run: &shardsmith_manifest::unfinished::Unfinished,
) -> shardsmith_store::Error {
    shardsmith_store::Error::Unfinished {
        location,
        what: run.describe(),
        advice: format!(
            "a manifest of it would pass part of a dataset off as the whole, and the run could no longer resume; {}; or add --accept-unfinished to describe the files as they are",
            run.how_to_finish()
        ),
    }
}
