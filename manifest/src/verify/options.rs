//! How to verify, and the hook that compares every file with digests recorded outside
//! the manifest (a signature).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::{Finding, InspectorFactory};

/// How to verify.
pub struct VerifyOptions<'a> {
    /// Manifest to use instead of `DIR/manifest.json`.
    pub manifest: Option<PathBuf>,
    /// Root digest the manifest must have (catches a replaced manifest).
    pub expect_root: Option<String>,
    /// Structural checkers.
    pub inspectors: &'a dyn InspectorFactory,
    /// Accept a path with nothing to verify (no file, or no recorded digest and no file
    /// of a known format) instead of reporting it.
    pub allow_empty: bool,
    /// Keep every file's SHA-256 in [`VerifyReport::digests`] (for a signature, from the
    /// same read).
    pub collect_digests: bool,
    /// Digests recorded elsewhere (a signature) to compare every file with, from the
    /// same read.
    pub digest_check: Option<&'a dyn DigestCheck>,
}

/// A comparison of the files' SHA-256 with digests recorded outside the manifest (a
/// signature bundle). Problems are findings; an I/O failure is an `unreadable_file`.
pub trait DigestCheck: Sync {
    /// Compares `digests` (every file read, by relative path; `.` for a single file)
    /// with the record; `root` is the verified path, for files to read besides.
    fn check(&self, root: &Path, digests: &BTreeMap<String, [u8; 32]>) -> DigestCheckOutcome;
}

/// What a [`DigestCheck`] found.
#[derive(Clone, Debug, Default)]
pub struct DigestCheckOutcome {
    /// Problems.
    pub findings: Vec<Finding>,
    /// Remarks.
    pub notes: Vec<String>,
    /// Files whose digest was compared (and matched or not).
    pub covered: BTreeSet<String>,
}
