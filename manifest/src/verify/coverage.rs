//! What each file was checked against, and the finding when nothing was checked.

use std::path::Path;

use super::options::VerifyOptions;
use super::report::{Expected, VerifyReport};
use crate::{Finding, FindingKind, Manifest, SUMS_FILE};

/// One file read: what it was checked against.
pub(super) struct Seen {
    rel: String,
    /// 0: no recorded digest, 1: the manifest's, 2: `SHA256SUMS`'.
    recorded: u8,
    inspected: bool,
}

impl Seen {
    pub(super) fn new(rel: &str, expected: &Expected, inspected: bool) -> Self {
        let recorded = match (&expected.entry, &expected.sha256) {
            (Some(_), _) => 1,
            (None, Some(_)) => 2,
            (None, None) => 0,
        };
        Seen {
            rel: rel.to_string(),
            recorded,
            inspected,
        }
    }
}

/// Runs the caller's digest check, if any, then counts what every file was checked
/// against. Returns true when the check covered some file.
pub(super) fn finish(
    report: &mut VerifyReport,
    root: &Path,
    options: &VerifyOptions<'_>,
    seen: &[Seen],
) -> bool {
    let outcome = options
        .digest_check
        .map(|check| check.check(root, &report.digests))
        .unwrap_or_default();
    report.findings.extend(outcome.findings);
    report.notes.extend(outcome.notes);
    let c = &mut report.checked;
    for file in seen {
        match file.recorded {
            1 => c.manifest += 1,
            2 => c.sums += 1,
            _ => {}
        }
        let signed = outcome.covered.contains(&file.rel);
        c.signature += u64::from(signed);
        c.structure += u64::from(file.inspected);
        if file.recorded == 0 && !signed && !file.inspected {
            c.unchecked += 1;
            if c.unchecked_examples.len() < 3 {
                c.unchecked_examples.push(file.rel.clone());
            }
        }
    }
    !outcome.covered.is_empty()
}

/// A finding when a directory gave nothing to check: no file at all, or no recorded
/// digest and no file of a known format (a failed download, a folder of source code).
pub(super) fn nothing_to_verify(
    report: &VerifyReport,
    manifest: Option<&Manifest>,
    has_sums: bool,
) -> Option<Finding> {
    const HINT: &str = "pass --allow-empty if that is expected";
    let reason = if report.files_checked == 0 && report.errors() == 0 {
        match manifest {
            Some(_) => format!("the manifest lists no file and the directory holds none; {HINT}"),
            None => format!("the directory holds no file; {HINT}"),
        }
    } else if manifest.is_none()
        && !has_sums
        && report.checked.structure == 0
        && report.checked.signature == 0
        && report.files_checked > 0
    {
        let examples: Vec<String> = report
            .checked
            .unchecked_examples
            .iter()
            .map(|e| format!("`{e}`"))
            .collect();
        format!(
            "no manifest, no {SUMS_FILE}, and none of the {} file(s) is of a format shardsmith checks ({}{}); write a manifest when the data is produced (`shardsmith manifest DIR`), or {HINT}",
            report.files_checked,
            examples.join(", "),
            if report.checked.unchecked > examples.len() as u64 {
                ", ..."
            } else {
                ""
            },
        )
    } else {
        return None;
    };
    Some(Finding::error(FindingKind::NothingToVerify, ".", reason))
}
