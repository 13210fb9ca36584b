//! A shards signature against the files present: each signed file's shards re-hashed on
//! every core (files and the shards within a file alike) and compared with the
//! statement's, a damaged shard named by its byte range. A file whose size differs from
//! what the shards cover is reported without being read. As in model_signing, an empty
//! file has no shard: a shards signature neither covers nor misses one.

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;
use shardsmith_manifest::{Finding, FindingKind, hex};

use crate::files::FileSet;
use crate::statement::{Span, Statement};
use crate::{Error, Result, shards};

/// Most damaged ranges a finding lists in its message.
const LISTED: usize = 8;

/// What comparing the shards found.
#[derive(Debug, Default)]
pub(crate) struct Compared {
    /// Files missing, resized, damaged or added.
    pub(crate) findings: Vec<Finding>,
    /// Signed files present (compared, whether they matched or not).
    pub(crate) covered: Vec<String>,
}

/// What became of one signed file.
enum Outcome {
    Missing,
    Resized { size: u64, signed: u64 },
    Read { job: usize },
}

/// Compares the shards `statement` (method `shards`, of `shard_size` bytes) lists with
/// the files of `set`; `shown` names the signature in findings.
pub(crate) fn compare(
    statement: &Statement,
    shard_size: u64,
    set: &FileSet,
    shown: &str,
) -> Result<Compared> {
    let mut signed: BTreeMap<&str, Vec<(Span, [u8; 32])>> = BTreeMap::new();
    for r in &statement.resources {
        if let Some(span) = r.span {
            signed.entry(&r.name).or_default().push((span, r.digest));
        }
    }
    let local: BTreeMap<&str, &Path> = set
        .files
        .iter()
        .map(|(name, full)| (name.as_str(), full.as_path()))
        .collect();
    let size_of = |full: &Path| -> Result<u64> {
        Ok(std::fs::metadata(full)
            .map_err(|e| Error::io("reading", full, e))?
            .len())
    };
    let mut out = Compared::default();
    let mut outcomes = Vec::with_capacity(signed.len());
    let mut jobs: Vec<(&Path, Vec<Span>)> = Vec::new();
    for (name, shards) in &mut signed {
        shards.sort_unstable_by_key(|(span, _)| *span);
        let Some(full) = local.get(name) else {
            outcomes.push(Outcome::Missing);
            continue;
        };
        out.covered.push((*name).to_string());
        let size = size_of(full)?;
        let covers = shards.last().map_or(0, |(span, _)| span.end);
        if size != covers {
            outcomes.push(Outcome::Resized {
                size,
                signed: covers,
            });
            continue;
        }
        outcomes.push(Outcome::Read { job: jobs.len() });
        jobs.push((full, shards.iter().map(|(span, _)| *span).collect()));
    }
    let hashed: Vec<Vec<[u8; 32]>> = jobs
        .par_iter()
        .map(|(full, spans)| shards::hash_spans(full, spans, &|_| {}))
        .collect::<Result<_>>()?;
    for ((name, shards), outcome) in signed.iter().zip(outcomes) {
        let finding = match outcome {
            Outcome::Missing => Some(Finding::error(
                FindingKind::SignedFileMissing,
                *name,
                format!("covered by the signature `{shown}` but not present"),
            )),
            Outcome::Resized { size, signed } => Some(
                Finding::error(
                    FindingKind::SignedDigestMismatch,
                    *name,
                    format!(
                        "the file is {size} bytes; the signature `{shown}` covers {signed} ({} shard(s) of {shard_size} bytes)",
                        shards.len()
                    ),
                )
                .at(size.min(signed))
                .values(format!("{signed} bytes"), format!("{size} bytes")),
            ),
            Outcome::Read { job } => damaged(name, shards, &hashed[job], shard_size, shown),
        };
        out.findings.extend(finding);
    }
    for (name, full) in &local {
        if !signed.contains_key(name) && size_of(full)? > 0 {
            out.findings.push(Finding::error(
                FindingKind::UnsignedFile,
                *name,
                format!("present but not covered by the signature `{shown}` (added after signing)"),
            ));
        }
    }
    Ok(out)
}

/// The finding for a file whose shards' digests differ from the signed ones, if any do:
/// at the first damaged range, the others listed.
fn damaged(
    name: &str,
    shards: &[(Span, [u8; 32])],
    actual: &[[u8; 32]],
    shard_size: u64,
    shown: &str,
) -> Option<Finding> {
    let bad: Vec<(usize, Span, &[u8; 32], &[u8; 32])> = shards
        .iter()
        .zip(actual)
        .enumerate()
        .filter(|(_, ((_, want), got))| want != *got)
        .map(|(i, ((span, want), got))| (i, *span, want, got))
        .collect();
    let &(index, first, want, got) = bad.first()?;
    let message = if bad.len() == 1 {
        format!(
            "SHA-256 of shard {} of {} differs from the one the signature `{shown}` covers",
            index + 1,
            shards.len()
        )
    } else {
        let mut ranges: Vec<String> = bad
            .iter()
            .take(LISTED)
            .map(|(_, span, _, _)| span.to_string())
            .collect();
        if bad.len() > LISTED {
            ranges.push("...".into());
        }
        format!(
            "SHA-256 of {} of {} shards of {shard_size} bytes differs from the ones the signature `{shown}` covers (bytes {}); the range shown is the first",
            bad.len(),
            shards.len(),
            ranges.join(", ")
        )
    };
    Some(
        Finding::error(FindingKind::SignedDigestMismatch, name, message)
            .range(first.start, first.end)
            .values(hex(want), hex(got)),
    )
}
