//! Progress callbacks of a `pack` run.

/// Callbacks for progress; all default to nothing. Called from worker threads.
pub trait PackObserver: Sync {
    /// The plan is known: samples and payload bytes to write, shards in all.
    fn planned(&self, _samples: u64, _bytes: u64, _shards: usize) {}
    /// Samples handled (written, resumed or skipped) and their payload bytes.
    fn advanced(&self, _samples: u64, _bytes: u64) {}
    /// Image transforms start, before planning: this many listed samples to go through.
    fn transforming(&self, _samples: u64) {}
    /// Listed samples gone through by the image transforms.
    fn transformed(&self, _samples: u64) {}
}

/// Observes nothing.
pub struct NoProgress;
impl PackObserver for NoProgress {}
