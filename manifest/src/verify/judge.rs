//! A manifest's bytes judged: ours or another tool's, intact (its root digest), and the
//! pinned dataset (`--expect-root`).

use std::path::Path;

use super::options::VerifyOptions;
use super::report::VerifyReport;
use crate::{Error, Finding, FindingKind, Manifest, Result, root_digest};

/// A finding when `--expect-root` was given but `why` leaves nothing to compare it with.
pub(super) fn no_pin(
    report: &mut VerifyReport,
    options: &VerifyOptions<'_>,
    display: &str,
    why: &str,
) {
    if options.expect_root.is_some() {
        report.findings.push(Finding::error(
            FindingKind::MissingFile,
            display,
            format!("--expect-root was given but {why}"),
        ));
    }
}

/// The manifest's bytes parsed and checked (root digest, `--expect-root`), as
/// `load_manifest` does for a local one.
pub(super) fn judge_manifest(
    bytes: &[u8],
    manifest_path: &Path,
    options: &VerifyOptions<'_>,
    display: &str,
    report: &mut VerifyReport,
) -> Result<(Option<Manifest>, bool)> {
    let no_pin = |report: &mut VerifyReport, why: &str| no_pin(report, options, display, why);
    if let Err(Error::ForeignManifest { reason, .. }) = Manifest::parse(bytes, manifest_path) {
        if options.manifest.is_some() {
            report.manifest = Some(display.to_string());
            report.findings.push(Finding::error(
                FindingKind::ManifestInvalid,
                display,
                format!("is not a shardsmith manifest: {reason}"),
            ));
            return Ok((None, false));
        }
        report.notes.push(format!(
            "`{display}` is not a shardsmith manifest, so it was checked as one of the files: {reason}"
        ));
        no_pin(report, &format!("`{display}` is not a shardsmith manifest"));
        return Ok((None, true));
    }
    report.manifest = Some(display.to_string());
    match Manifest::parse(bytes, manifest_path) {
        Ok((manifest, value)) => {
            let computed = root_digest(&value);
            if manifest.root_sha256 != computed {
                report.findings.push(
                    Finding::error(
                        FindingKind::RootMismatch,
                        display,
                        "manifest content does not match its root_sha256: it was edited or damaged",
                    )
                    .values(&manifest.root_sha256, &computed),
                );
            }
            if let Some(pinned) = &options.expect_root
                && !pinned.eq_ignore_ascii_case(&computed)
            {
                report.findings.push(
                    Finding::error(
                        FindingKind::RootMismatch,
                        display,
                        "manifest root digest differs from --expect-root: this is not the pinned dataset",
                    )
                    .values(pinned.to_ascii_lowercase(), &computed),
                );
            }
            report.root_sha256 = Some(computed);
            Ok((Some(manifest), false))
        }
        Err(e) => {
            let reason = match e {
                Error::BadManifest { reason, .. } => reason,
                other => other.to_string(),
            };
            report.findings.push(Finding::error(
                FindingKind::ManifestInvalid,
                display,
                format!("{reason}; files were checked structurally only"),
            ));
            Ok((None, false))
        }
    }
}
