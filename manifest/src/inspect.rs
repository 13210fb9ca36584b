use std::collections::BTreeMap;
use std::path::Path;

use crate::{FileEntry, Finding, Manifest};

/// A structural parser fed the bytes of one file in order, during the same read that
/// hashes it. Implementations live in the formats crate (a tar walker, ...).
pub trait Inspector: Send {
    /// The next bytes of the file, in order, without gaps.
    fn update(&mut self, data: &[u8]);
    /// The file ended after all bytes given to `update`.
    fn finish(self: Box<Self>) -> Inspection;
}

/// What an [`Inspector`] learned about a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inspection {
    /// Format recognised (`webdataset`, ...).
    pub format: String,
    /// Samples in the file, as readers count them.
    pub samples: Option<u64>,
    /// Key of the first sample.
    pub first_key: Option<String>,
    /// Key of the last sample.
    pub last_key: Option<String>,
    /// Format-specific facts for the dataset-level check
    /// ([`InspectorFactory::check_layout`]): digests of decompressed content, counts,
    /// tensor lists, ...
    pub facts: BTreeMap<String, serde_json::Value>,
    /// Problems found.
    pub findings: Vec<Finding>,
}

/// The fact `verify` adds to the inspection of a file whose size or SHA-256 differs
/// from the manifest, for dataset-level checks that look closer at changed files.
pub const CHANGED: &str = "manifest.changed";

/// What an inspector factory knows about the file it is asked about.
#[derive(Clone, Copy, Debug)]
pub struct FileContext<'a> {
    /// The dataset directory (or the directory of a single verified file).
    pub root: &'a Path,
    /// The file, relative to `root`, `/`-separated.
    pub path: &'a str,
    /// The manifest's entry for the file, when there is a manifest listing it. Its
    /// `format` says what the file was written as, even when its first block is damaged.
    pub entry: Option<&'a FileEntry>,
    /// The whole manifest, when there is one (options such as a vocabulary size).
    pub manifest: Option<&'a Manifest>,
}

/// Chooses an inspector for each file from its context and first bytes, and checks what
/// spans files once every file was read.
pub trait InspectorFactory: Sync {
    /// An inspector for the file described by `ctx` whose first bytes are `head`
    /// (shorter only if the file is), or `None` for plain bytes.
    fn inspector_for(&self, ctx: &FileContext<'_>, head: &[u8]) -> Option<Box<dyn Inspector>>;

    /// Dataset-level checks after every file was read once: an index against the files
    /// it lists, a shard set against its metadata. `files` maps every present file
    /// (relative path) to its size; `inspections` holds what each file's inspector found.
    fn check_layout(
        &self,
        _root: &Path,
        _files: &BTreeMap<String, u64>,
        _inspections: &BTreeMap<String, Inspection>,
        _manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        Vec::new()
    }
}

/// Hashes only: no file is inspected.
pub struct NoInspection;

impl InspectorFactory for NoInspection {
    fn inspector_for(&self, _ctx: &FileContext<'_>, _head: &[u8]) -> Option<Box<dyn Inspector>> {
        None
    }
}
