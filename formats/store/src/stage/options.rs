//! What `stage` is told and what it reports.

/// The default [`StageOptions::chunk_memory`]: 512 MiB, eight 64 MiB chunks in flight.
pub const DEFAULT_CHUNK_MEMORY: u64 = 512 << 20;

/// How `stage` runs.
#[derive(Clone, Debug)]
pub struct StageOptions {
    /// Keep a destination file whose size matches without hashing it again.
    pub trust_existing: bool,
    /// Files copied at once; also the most chunks of one file fetched at once.
    pub concurrency: usize,
    /// Copy a source that holds an unfinished run's state and no manifest (else refused),
    /// writing a manifest of the files as they are.
    pub accept_unfinished: bool,
    /// Bytes of chunk buffers held at once by the files copied by chunks, all files
    /// together: chunks fetched and not yet written. A chunk larger than this is fetched
    /// alone.
    pub chunk_memory: u64,
    /// Copy by chunks from a source that reads files directly (a local or network file
    /// system) too, not only from object stores. Off in the CLI: on a local disk the
    /// streamed copy measured faster (2 GiB in 1.9 s against 2.5 s) in 20 MB instead of
    /// 545 MB, since chunks go to the destination in order through buffers.
    pub chunks_from_files: bool,
}

/// A file that did not arrive as the manifest says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Path relative to the dataset.
    pub path: String,
    /// What differs, in words.
    pub reason: String,
    /// The first byte range known to differ: the damaged chunk of a file copied by
    /// chunks, else the first chunk whose CRC differs when the manifest's chunk CRCs
    /// narrow it.
    pub range: Option<(u64, u64)>,
}

/// What a stage did.
#[derive(Clone, Debug, Default)]
pub struct StageReport {
    /// True when the source had a manifest (else one was written for what was copied).
    pub had_manifest: bool,
    /// Files the dataset has (as the manifest lists them, or as listed).
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files copied by this run.
    pub copied: usize,
    /// Bytes copied by this run.
    pub bytes_copied: u64,
    /// Of the files copied, those fetched and checked chunk by chunk (their manifest
    /// entries list chunk digests).
    pub chunked: usize,
    /// The chunk size of those files (the largest, should their lists differ).
    pub chunk_size: u64,
    /// Files already at the destination, kept.
    pub kept: usize,
    /// Files that did not match; none were left at the destination.
    pub mismatches: Vec<Mismatch>,
    /// True when the destination's manifest was written (every file matched).
    pub complete: bool,
    /// The root digest of the destination's manifest.
    pub root_sha256: String,
}
