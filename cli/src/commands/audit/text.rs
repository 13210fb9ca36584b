//! The summaries `audit` prints: of a training run, one line per checkpoint, its first
//! errors, the run's findings and the checkpoint to resume from; of a Hugging Face
//! cache, one line per repository and snapshot, intact or broken.

use super::hfcache::CacheAudit;
use super::run::RunAudit;
use crate::commands::Status;
use crate::commands::verify::tag;
use crate::output::seconds;
use crate::size::human_bytes;

/// Errors shown per checkpoint without `--verbose`.
const SHOWN: usize = 5;

impl RunAudit {
    /// The summary; `verbose` shows every finding, warnings included.
    pub fn text(&self, verbose: bool) -> String {
        let report = &self.report;
        let bytes: u64 = report.checkpoints.iter().map(|c| c.bytes_checked).sum();
        let intact = report.checkpoints.iter().filter(|c| c.intact).count();
        let mut text = format!(
            "audited {}: {} checkpoint(s), {intact} intact, {} in {}\n",
            self.run_dir.display(),
            report.checkpoints.len(),
            human_bytes(bytes),
            seconds(self.elapsed),
        );
        if let Some((copies, bytes)) = self.copied.filter(|&(n, _)| n > 0) {
            text.push_str(&format!(
                "  {copies} checkpoint(s) without a manifest copied to {} to be checked ({}), then deleted\n",
                self.scratch.display(),
                human_bytes(bytes),
            ));
        }
        let width = report
            .checkpoints
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(0);
        let shown = if verbose { usize::MAX } else { SHOWN };
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
            for f in c
                .findings
                .iter()
                .filter(|f| f.is_error() || verbose)
                .take(shown)
            {
                text.push_str(&format!("      {}: {f}\n", tag(f)));
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
            text.push_str(&format!("{}: {f}\n", tag(f)));
        }
        text.push_str(&self.verdict());
        text
    }

    /// The last line: where to resume from, or why not.
    fn verdict(&self) -> String {
        let report = &self.report;
        match (self.resume_from(), self.status()) {
            (Some(path), Status::Clean) => format!("OK: resume from {}\n", path.display()),
            (Some(path), Status::Problems) => format!(
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
            ),
            (None, _) => "FAILED: no checkpoint of the run is intact\n".to_string(),
        }
    }
}

impl CacheAudit {
    /// The summary; `verbose` shows every finding, warnings included.
    pub fn text(&self, verbose: bool) -> String {
        let report = &self.report;
        let snapshots: Vec<_> = report
            .repos
            .iter()
            .flat_map(|r| r.snapshots.iter().map(move |s| (r, s)))
            .collect();
        let intact = snapshots.iter().filter(|(_, s)| s.intact).count();
        let mut text = format!(
            "audited {} (Hugging Face cache): {} repo(s), {} snapshot(s), {intact} intact, {} in {}\n",
            self.path.display(),
            report.repos.len(),
            snapshots.len(),
            human_bytes(report.bytes_checked),
            seconds(self.elapsed),
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
        let shown = if verbose { usize::MAX } else { SHOWN };
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
                .filter(|f| f.is_error() || verbose)
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
        for f in report.findings().iter().filter(|f| {
            !snapshots
                .iter()
                .any(|(_, s)| s.findings.iter().any(|g| g == *f))
        }) {
            if f.is_error() || verbose {
                text.push_str(&format!("{}: {f}\n", tag(f)));
            }
        }
        text.push_str(if self.status() == Status::Clean {
            "OK: every snapshot a ref names is intact\n"
        } else {
            "FAILED: a snapshot a ref names is broken or missing\n"
        });
        text
    }
}
