//! What `verify` reports of a DCP checkpoint's chunks that disagree with their data.

use std::path::Path;

use shardsmith_manifest::{Finding, FindingKind};

use super::read::Cause;
use super::resolve::resolve;
use crate::Error;

/// Most chunks `verify` names for one `.metadata`; the rest are counted in one more
/// finding.
const MAX_NAMED: usize = 100;

/// The findings of `verify` for the DCP checkpoint whose `.metadata` is `meta_rel`
/// (under `root`): every chunk whose stored data disagrees with `.metadata`, and those
/// that cannot be read where no other check reports why (`damaged` says which data
/// files, by path relative to `root`, already have an error).
pub(crate) fn check(root: &Path, meta_rel: &str, damaged: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let dir = meta_rel.rsplit_once('/').map_or("", |(d, _)| d);
    let at = |file: &str| match dir {
        "" => file.to_string(),
        _ => format!("{dir}/{file}"),
    };
    let Ok((_, problems)) = resolve(&root.join(dir), meta_rel) else {
        return Vec::new(); // an unreadable .metadata is its own finding
    };
    let mut out = Vec::new();
    for p in problems {
        let file = p.file.as_deref().map(at);
        let reason = match &p.error {
            Error::Io { source, .. } | Error::Unreadable { source, .. } => source.to_string(),
            Error::Rule(e) => e.to_string(),
            Error::Malformed { reason, .. } | Error::Unsupported { reason, .. } => reason.clone(),
        };
        let finding = match p.cause {
            Cause::Coverage | Cause::File | Cause::PastEnd | Cause::Transform | Cause::Overlap => {
                continue;
            }
            Cause::Container if file.as_deref().is_some_and(damaged) => continue,
            Cause::Container | Cause::Mismatch => {
                Finding::error(FindingKind::BadTensor, meta_rel, reason)
            }
            Cause::Unsupported => Finding::warning(
                FindingKind::UnsupportedDtype,
                meta_rel,
                format!("{reason}: its chunks were not held against their data"),
            ),
        };
        out.push(match p.range {
            Some((start, end)) => Finding {
                path: file.unwrap_or_else(|| meta_rel.to_string()),
                ..finding.range(start, end)
            },
            None => finding,
        });
    }
    if out.len() > MAX_NAMED {
        let more = out.len() - MAX_NAMED;
        let errors = out[MAX_NAMED..].iter().any(Finding::is_error);
        out.truncate(MAX_NAMED);
        let message = format!(
            "{more} more chunk(s) disagree with the data stored for them or were not read (the first {MAX_NAMED} are named)"
        );
        out.push(if errors {
            Finding::error(FindingKind::BadTensor, meta_rel, message)
        } else {
            Finding::warning(FindingKind::UnsupportedDtype, meta_rel, message)
        });
    }
    out
}
