//! `verify --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_manifest::Finding;
use shardsmith_manifest::verify::{CheckedRange, Coverage};
use shardsmith_signing::SignatureReport;

use super::sorted::sorted;

/// What `verify --json` prints when verification ran (exit 0 or 1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Verify<'a> {
    /// Bytes read.
    pub bytes_checked: u64,
    /// What the files were checked against: counts of files compared with the manifest
    /// (`manifest`), `SHA256SUMS` (`sums`) or a signature (`signature`), walked by a
    /// format checker (`structure`), only read (`unchecked`, the first ones named in
    /// `unchecked_examples`).
    #[serde(serialize_with = "sorted")]
    pub checked: &'a Coverage,
    /// Always `verify`.
    pub command: &'static str,
    /// Documents counted in token files.
    pub documents: u64,
    /// Number of error-severity findings.
    pub errors: usize,
    /// Files read.
    pub files_checked: u64,
    /// Everything found, sorted by file and offset: each one's `kind`, `severity`,
    /// `path`, `offset` (and `end`), `expected`, `actual` and `message`.
    #[serde(serialize_with = "sorted")]
    pub findings: &'a [Finding],
    /// The manifest verified against, or null without one.
    pub manifest: Option<&'a str>,
    /// Remarks on what could not be checked.
    pub notes: &'a [String],
    /// True when no error-severity finding was made (exit 0).
    pub ok: bool,
    /// Null when every file was checked whole. With `--range`, the check was partial:
    /// the bytes of each file that were read and compared with its chunk SHA-256s,
    /// widened to whole chunks (`path`, `start`, `end` exclusive, `first_chunk` and
    /// `last_chunk` of its `chunks` of `chunk_size` bytes), by path and offset; nothing
    /// else was read.
    #[serde(serialize_with = "sorted")]
    pub partial: Option<&'a [CheckedRange]>,
    /// The path verified, as given.
    pub path: String,
    /// The root digest recomputed from the manifest, or null without one.
    pub root_sha256: Option<&'a str>,
    /// Samples counted in shards.
    pub samples: u64,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// With `--signature`: whether the bundle is `valid`, the key's `curve` and
    /// `key_hint`, the `files` it covers, its `findings` and `notes`; null without.
    #[serde(serialize_with = "sorted")]
    pub signature: Option<&'a SignatureReport>,
    /// Tokens counted in token files.
    pub tokens: u64,
    /// The version of shardsmith.
    pub version: &'static str,
    /// Number of warning-severity findings.
    pub warnings: usize,
}
