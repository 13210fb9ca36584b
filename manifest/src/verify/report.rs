//! What a verification found, and what each file was checked against.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ranges::CheckedRange;
use crate::{FileEntry, Finding};

/// What the files read were checked against, counted per file (a file can count under
/// a digest and under structure).
#[derive(Clone, Debug, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Coverage {
    /// Files whose size and SHA-256 were compared with the manifest.
    pub manifest: u64,
    /// Files whose SHA-256 was compared with `SHA256SUMS` (no usable manifest).
    pub sums: u64,
    /// Files whose SHA-256 was compared with a signature.
    pub signature: u64,
    /// Files whose structure a format inspector walked.
    pub structure: u64,
    /// Files with neither a recorded digest nor a known format: read, nothing checked.
    pub unchecked: u64,
    /// The first few of them, for the summary.
    pub unchecked_examples: Vec<String>,
}

/// The outcome of a verification: what was checked and every finding.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// Manifest used, if any.
    pub manifest: Option<String>,
    /// Root digest recomputed from the manifest, if any.
    pub root_sha256: Option<String>,
    /// Files read.
    pub files_checked: u64,
    /// Bytes read.
    pub bytes_checked: u64,
    /// Samples counted by the inspectors.
    pub samples: u64,
    /// Documents in token files (Megatron indices).
    pub documents: u64,
    /// Tokens in token files.
    pub tokens: u64,
    /// What the files were checked against.
    pub checked: Coverage,
    /// Everything found, sorted by file and offset.
    pub findings: Vec<Finding>,
    /// SHA-256 of every file read, by relative path (`.` for a single file), when
    /// `VerifyOptions::collect_digests` asked for them.
    #[serde(skip)]
    pub digests: BTreeMap<String, [u8; 32]>,
    /// Remarks on what could not be checked.
    pub notes: Vec<String>,
    /// For a partial check ([`super::verify_ranges`]): the bytes of each file read,
    /// widened to whole chunks; `None` when every file was read whole.
    pub partial: Option<Vec<CheckedRange>>,
}

impl VerifyReport {
    /// Number of error-severity findings.
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.is_error()).count()
    }

    /// Number of warnings.
    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }
}

/// What one file is expected to be.
#[derive(Clone, Debug, Default)]
pub(super) struct Expected {
    pub(super) entry: Option<FileEntry>,
    pub(super) sha256: Option<String>,
}
