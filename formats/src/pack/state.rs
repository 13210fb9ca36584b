//! Resume records of `pack`: what the manifest needs about each finished shard. The
//! rules for the output directory and the state files are shared ([`crate::resume`]).

use serde::{Deserialize, Serialize};
use shardsmith_manifest::{FileEntry, Manifest, ManifestKind, Skipped};

use crate::Result;
use crate::format::ShardFormat;
pub use crate::resume::STATE_DIR;
use crate::resume::{self, Job, Start};
use crate::sink::OutputSink;

/// Everything the manifest needs about one written shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// Manifest entry (path, size, digests, samples, keys).
    pub entry: FileEntry,
    /// Inputs left out while writing this shard.
    pub skipped: Vec<Skipped>,
    /// Format-specific facts from the encoder (MDS: the shard's index entry).
    #[serde(default)]
    pub facts: serde_json::Value,
}

/// True when `entry` is a shard name this format and prefix produce.
fn is_own_shard(entry: &str, format: &dyn ShardFormat, prefix: &str) -> bool {
    entry
        .split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .filter_map(|run| run.parse::<usize>().ok())
        .any(|n| format.shard_name(prefix, n) == entry)
}

/// Decides how to start in the output and cleans what must go. `candidate` is the
/// manifest this run would write, without files.
pub(crate) fn prepare(
    sink: &dyn OutputSink,
    candidate: &Manifest,
    fingerprint: &str,
    format: &dyn ShardFormat,
    prefix: &str,
    force: bool,
) -> Result<Start> {
    let is_own = |entry: &str| is_own_shard(entry, format, prefix);
    let job = Job {
        command: "pack",
        verb: "packed",
        kind: ManifestKind::Pack,
        is_own: &is_own,
    };
    resume::prepare(sink, &job, candidate, fingerprint, force)
}

/// The record of a finished shard of this run, if the shard is there and intact in size.
pub(crate) fn load_done(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    name: &str,
) -> Result<Option<ShardRecord>> {
    let Some(record) = resume::load_done::<ShardRecord>(sink, fingerprint, plan, name)? else {
        return Ok(None);
    };
    if record.entry.path != name || sink.size(name)? != Some(record.entry.size) {
        return Ok(None);
    }
    Ok(Some(record))
}

/// Records a shard as finished; call before committing the shard.
pub(crate) fn save_done(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    record: &ShardRecord,
) -> Result<()> {
    resume::save_done(sink, fingerprint, plan, &record.entry.path, record)
}

/// Removes the resume state once the manifest is written.
pub(crate) fn clear(sink: &dyn OutputSink) -> Result<()> {
    resume::clear(sink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webdataset::WebDataset;

    #[test]
    fn own_shards_are_recognised_by_name() {
        assert!(is_own_shard("shard-000012.tar", &WebDataset, "shard"));
        assert!(is_own_shard("a-1-000000.tar", &WebDataset, "a-1"));
        assert!(!is_own_shard("shard-12.tar", &WebDataset, "shard"));
        assert!(!is_own_shard("other-000012.tar", &WebDataset, "shard"));
        assert!(!is_own_shard("notes.txt", &WebDataset, "shard"));
    }
}
