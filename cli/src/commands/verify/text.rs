//! The summary `verify` prints: what was read, what it was checked against, every
//! finding, and the verdict.

use shardsmith_checkpoint::hfcache::CacheReport;
use shardsmith_manifest::Finding;
use shardsmith_manifest::verify::{CheckedRange, VerifyReport};

use super::run::Verified;
use crate::commands::Status;
use crate::output::seconds;
use crate::size::human_bytes;

impl Verified {
    /// The summary, one line per finding after the counts, the verdict last.
    pub fn text(&self) -> String {
        let report = &self.report;
        let mut text = match &self.cache {
            Some(cache) => self.cache_lines(cache),
            None => self.dataset_lines(),
        };
        for finding in &report.findings {
            text.push_str(&format!("{}: {finding}\n", tag(finding)));
        }
        text.push_str(&match self.status() {
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
        text
    }

    fn rate(&self, bytes: u64) -> String {
        human_bytes((bytes as f64 / self.elapsed.as_secs_f64().max(1e-9)) as u64)
    }

    /// A dataset's counts, coverage, signature and notes.
    fn dataset_lines(&self) -> String {
        let report = &self.report;
        let against = match (&report.manifest, &report.root_sha256) {
            (Some(m), Some(root)) => format!(" against {m} (root {root})"),
            (Some(m), None) => format!(" ({m} unusable)"),
            _ => String::new(),
        };
        let partial = if report.partial.is_some() {
            " (partial: --range)"
        } else {
            ""
        };
        let mut text = format!(
            "verified {}{partial}: {} files, {}{}{against} in {} ({}/s)\n",
            self.path.display(),
            report.files_checked,
            human_bytes(report.bytes_checked),
            counts(report),
            seconds(self.elapsed),
            self.rate(report.bytes_checked),
        );
        match &report.partial {
            Some(ranges) => text.push_str(&range_lines(ranges)),
            None => text.push_str(&coverage_lines(report)),
        }
        if let Some(sig) = &self.signature {
            text.push_str(&crate::commands::sign::signature_line(sig));
        }
        for note in &report.notes {
            text.push_str(&format!("note: {note}\n"));
        }
        text
    }

    /// A Hugging Face cache's counts: repositories, snapshots, blobs, links and refs.
    fn cache_lines(&self, cache: &CacheReport) -> String {
        let snapshots: usize = cache.repos.iter().map(|r| r.snapshots.len()).sum();
        let mut text = format!(
            "verified {} (Hugging Face cache): {} repo(s), {snapshots} snapshot(s), {} blobs, {} in {} ({}/s)\n",
            self.path.display(),
            cache.repos.len(),
            cache.blobs_checked,
            human_bytes(cache.bytes_checked),
            seconds(self.elapsed),
            self.rate(cache.bytes_checked),
        );
        text.push_str(&format!(
            "  digests    {} blob(s) against their names (SHA-256, git blob SHA-1)\n",
            cache.blobs_checked
        ));
        text.push_str(&format!(
            "  links      {} snapshot symlink(s) resolved, {} ref(s) read\n",
            cache.links_checked, cache.refs_checked
        ));
        if let Some(copies) = cache.copies_note() {
            text.push_str(&format!("  unchecked  {copies}\n"));
        }
        text
    }
}

/// `error` or `warning`.
pub(crate) fn tag(f: &Finding) -> &'static str {
    if f.is_error() { "error" } else { "warning" }
}

/// `, 120 samples`, `, 9677 documents, 23973863 tokens`: the counts that apply.
fn counts(report: &VerifyReport) -> String {
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

/// A partial check's bytes, one line per range read: which chunks of which file.
fn range_lines(ranges: &[CheckedRange]) -> String {
    if ranges.is_empty() {
        return "  ranges     none read\n".into();
    }
    let mut out = String::new();
    for r in ranges {
        let chunks = match r.first_chunk == r.last_chunk {
            true => format!("chunk {}", r.first_chunk),
            false => format!("chunks {}-{}", r.first_chunk, r.last_chunk),
        };
        out.push_str(&format!(
            "  range      {} bytes {}..{}: {chunks} of {} ({}) against their SHA-256s\n",
            r.path,
            r.start,
            r.end,
            r.chunks,
            chunk_name(r.chunk_size),
        ));
    }
    out
}

/// `64 MiB`, `16384 bytes`.
fn chunk_name(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// What the files were checked against, and what was only read.
fn coverage_lines(report: &VerifyReport) -> String {
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
