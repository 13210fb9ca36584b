//! `manifest s3://...`: every object hashed as it streams, `SHA256SUMS` and
//! `manifest.json` written to the prefix (or the manifest to a local `--output`).

use std::time::Instant;

use anyhow::{Context, Result};
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_manifest::unfinished::{LEASE_FILE, RUN_FILE, STATE_DIR, Unfinished};
use shardsmith_store::object::Remote;
use shardsmith_store::{ObjectDir, ObjectTree, OutputSink};

use super::settings::Settings;
use super::written::Manifested;
use crate::progress::Progress;

/// Checks the prefix (no manifest unless `--force`, no unfinished run), then hashes
/// every object under it and writes the manifest.
pub fn run(
    settings: &Settings,
    remote: &std::sync::Arc<Remote>,
    progress: &dyn Progress,
) -> Result<Manifested> {
    let started = Instant::now();
    let dir = ObjectDir::new(remote.clone());
    let target = settings.target();
    let exists = match &settings.output {
        Some(path) => path.exists(),
        None => dir.size(MANIFEST_FILE)?.is_some(),
    };
    if exists && !settings.force {
        return Err(settings.exists(&target));
    }
    if !settings.accept_unfinished && !exists {
        let names = dir.child(STATE_DIR)?.list()?;
        let run = dir.read(RUN_FILE)?;
        let leased = dir.size(LEASE_FILE)?.is_some();
        if let Some(run) = Unfinished::from_state(Some(&names), run.as_deref(), leased) {
            return Err(settings.unfinished(remote.url(""), &run).into());
        }
    }
    let tree = ObjectTree::new(remote.clone());
    let bar = progress.bytes_bar("hashing");
    let result = shardsmith_store::listed_manifest::manifest_of(
        &tree,
        remote.io_concurrency().min(32),
        &|total| bar.set_total(total),
        &|n| bar.inc(n),
    );
    bar.finish_and_clear();
    let manifest = result?;
    match &settings.output {
        // Atomically, as every manifest is written: never half of one at `path`.
        Some(path) => shardsmith_manifest::scan::write_atomic(path, &manifest.to_json_bytes())
            .with_context(|| format!("writing `{}`", path.display()))?,
        None => shardsmith_manifest::commit(
            &manifest.files,
            &manifest.to_json_bytes(),
            |name, bytes| dir.write_atomic(name, bytes),
        )?,
    }
    Ok(Manifested {
        target,
        manifest,
        findings: Vec::new(),
        not_recorded: Vec::new(),
        tensors: false,
        elapsed: started.elapsed(),
    })
}
