//! `manifest`'s run of a local directory (and the dispatch to [`super::remote`]).

use std::time::Instant;

use anyhow::Result;
use shardsmith_inspect::Inspectors;
use shardsmith_manifest::scan::scan_directory;

use super::settings::Settings;
use super::written::Manifested;
use crate::progress::Progress;

/// Hashes the directory and writes its manifest, showing progress on `progress`.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Manifested> {
    if let Some(remote) = &settings.remote {
        return super::remote::run(settings, remote, progress);
    }
    let started = Instant::now();
    let bar = progress.bytes_bar("hashing");
    let scan = scan_directory(
        &settings.dir,
        &Inspectors,
        &|total| bar.set_total(total),
        &|n| bar.inc(n),
    );
    bar.finish_and_clear();
    let mut scan = scan?;
    let mut not_recorded = Vec::new();
    if settings.tensors {
        not_recorded =
            shardsmith_checkpoint::tensors::recorded::record(&settings.dir, &mut scan.manifest)?;
    }
    shardsmith_manifest::scan::write_directory_manifest(
        &settings.dir,
        settings.output.as_deref(),
        &scan.manifest,
    )?;
    Ok(Manifested {
        target: settings.target(),
        manifest: scan.manifest,
        findings: scan.findings,
        not_recorded,
        tensors: settings.tensors,
        elapsed: started.elapsed(),
    })
}
