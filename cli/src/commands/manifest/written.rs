//! What `manifest` wrote: its summary and its `--json` report.

use std::time::Duration;

use shardsmith_checkpoint::tensors::recorded::NotRecorded;
use shardsmith_manifest::{Finding, Manifest};

use crate::output::seconds;
use crate::report;
use crate::size::human_bytes;

/// What `manifest` wrote.
#[derive(Debug)]
pub struct Manifested {
    /// The manifest file written.
    pub target: String,
    /// The manifest.
    pub manifest: Manifest,
    /// What the walk of the tar shards found.
    pub findings: Vec<Finding>,
    /// With `--tensors`: checkpoint files whose tensors were not recorded, and why.
    pub not_recorded: Vec<NotRecorded>,
    /// Whether tensors were recorded.
    pub tensors: bool,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl Manifested {
    /// What was left out or not recorded: one warning each.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.findings.iter().map(Finding::to_string).collect();
        for skip in &self.manifest.skipped {
            out.push(format!("left out `{}`: {}", skip.path, skip.reason));
        }
        for file in &self.not_recorded {
            out.push(format!(
                "tensors of `{}` not recorded: {}",
                file.path, file.reason
            ));
        }
        out
    }

    /// The summary.
    pub fn text(&self) -> String {
        let manifest = &self.manifest;
        let rate = manifest.totals.bytes as f64 / self.elapsed.as_secs_f64().max(1e-9);
        let mut text = format!(
            "wrote {}: {} files, {} in {} ({}/s)\n  root      {}\n",
            self.target,
            manifest.totals.files,
            human_bytes(manifest.totals.bytes),
            seconds(self.elapsed),
            human_bytes(rate as u64),
            manifest.root_sha256
        );
        if let Some(samples) = manifest.totals.samples {
            text.push_str(&format!("  samples   {samples} (tar shards walked)\n"));
        }
        if self.tensors {
            let files = manifest
                .files
                .iter()
                .filter(|f| !f.tensors.is_empty())
                .count();
            text.push_str(&format!(
                "  tensors   {} in {files} checkpoint file(s), each with the SHA-256 of its canonical form\n",
                self.tensor_count()
            ));
        }
        text
    }

    fn tensor_count(&self) -> u64 {
        self.manifest
            .files
            .iter()
            .map(|f| f.tensors.len() as u64)
            .sum()
    }

    /// The `--json` report.
    pub fn report(&self) -> report::Manifest<'_> {
        let manifest = &self.manifest;
        report::Manifest {
            bytes: manifest.totals.bytes,
            command: "manifest",
            files: manifest.totals.files,
            manifest: self.target.clone(),
            root_sha256: &manifest.root_sha256,
            samples: manifest.totals.samples,
            seconds: self.elapsed.as_secs_f64(),
            skipped: &manifest.skipped,
            tensors: self.tensors.then(|| self.tensor_count()),
            version: report::VERSION,
            warnings: &self.findings,
        }
    }
}
