use crate::Finding;

/// A structural parser fed the bytes of one file in order, during the same read that
/// hashes it. Implementations live in the formats crate (a tar walker, ...).
pub trait Inspector: Send {
    /// The next bytes of the file, in order, without gaps.
    fn update(&mut self, data: &[u8]);
    /// The file ended after all bytes given to `update`.
    fn finish(self: Box<Self>) -> Inspection;
}

/// What an [`Inspector`] learned about a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inspection {
    /// Format recognised (`webdataset`, ...).
    pub format: String,
    /// Samples in the file, as readers count them.
    pub samples: Option<u64>,
    /// Key of the first sample.
    pub first_key: Option<String>,
    /// Key of the last sample.
    pub last_key: Option<String>,
    /// Problems found.
    pub findings: Vec<Finding>,
}

/// Chooses an inspector for a file from its path and its first bytes.
pub trait InspectorFactory: Sync {
    /// An inspector for the file at `path` (relative to the dataset root) whose first
    /// bytes are `head` (shorter only if the file is), or `None` for plain bytes.
    /// `recorded` is the format a manifest recorded for the file: a shard whose first
    /// block was zeroed must still be walked as the format it was written in.
    fn inspector_for(
        &self,
        path: &str,
        head: &[u8],
        recorded: Option<&str>,
    ) -> Option<Box<dyn Inspector>>;
}

/// Hashes only: no file is inspected.
pub struct NoInspection;

impl InspectorFactory for NoInspection {
    fn inspector_for(
        &self,
        _path: &str,
        _head: &[u8],
        _recorded: Option<&str>,
    ) -> Option<Box<dyn Inspector>> {
        None
    }
}
