//! Resume records of `pack`: what the manifest needs about each finished shard. The
//! rules for the output directory and the state files are shared (`shardsmith_store::resume`).

use serde::{Deserialize, Serialize};
use shardsmith_manifest::{Duplicates, FileEntry, Manifest, ManifestKind, Skipped};

use shardsmith_shard::ShardFormat;
use shardsmith_store::OutputSink;
pub use shardsmith_store::resume::STATE_DIR;
use shardsmith_store::resume::{self, Job, Start};

use crate::Result;

/// Everything the manifest needs about one written shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// Manifest entry (path, size, digests, samples, keys).
    pub entry: FileEntry,
    /// Format-specific facts from the encoder (MDS: the shard's index entry).
    #[serde(default)]
    pub facts: serde_json::Value,
}

/// What became of one planned shard: written (under the number it was given), or not
/// written because every sample planned for it was left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// The shard, if any sample of the plan was packed.
    pub shard: Option<ShardRecord>,
    /// Inputs left out while writing this plan.
    pub skipped: Vec<Skipped>,
    /// The name the plan's shard has when no plan before it comes out empty
    /// (`format.shard_name(prefix, plan index)`): the final step of a split run renames
    /// shards to these names when it numbers them on past an empty plan.
    #[serde(default)]
    pub planned: String,
    /// With `--dedup`: the digests of the plan's samples, so that a resumed run knows
    /// what this one packed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digests: Option<crate::dedup::PlanDigests>,
    /// With `--dedup`: the samples of the plan left out as duplicates.
    #[serde(default, skip_serializing_if = "Duplicates::is_empty")]
    pub duplicates: Duplicates,
}

/// True when `entry` is a shard name this format and prefix produce.
pub(crate) fn is_own_shard(entry: &str, format: &dyn ShardFormat, prefix: &str) -> bool {
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
    Ok(resume::prepare(sink, &job, candidate, fingerprint, force)?)
}

/// The name of plan `index`'s record in the run state.
fn plan_name(index: usize) -> String {
    format!("plan-{index:06}")
}

/// The record of plan `index` of this run, if it was decided and its shard (if any) is
/// there under `name` with its recorded size.
pub(crate) fn load_done(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    index: usize,
    name: &str,
) -> Result<Option<PlanRecord>> {
    let Some(record) = resume::load_done::<PlanRecord>(sink, fingerprint, plan, &plan_name(index))?
    else {
        return Ok(None);
    };
    if let Some(shard) = &record.shard
        && (shard.entry.path != name || sink.size(name)? != Some(shard.entry.size))
    {
        return Ok(None);
    }
    Ok(Some(record))
}

/// Records plan `index` as decided; call before committing its shard.
pub(crate) fn save_done(
    sink: &dyn OutputSink,
    fingerprint: &str,
    plan: &str,
    index: usize,
    record: &PlanRecord,
) -> Result<()> {
    Ok(resume::save_done(
        sink,
        fingerprint,
        plan,
        &plan_name(index),
        record,
    )?)
}

/// After a failed run: see [`resume::abandon`].
pub(crate) fn abandon(sink: &dyn OutputSink, format: &dyn ShardFormat, prefix: &str) {
    resume::abandon(sink, &|entry| is_own_shard(entry, format, prefix));
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardsmith_shard::webdataset::WebDataset;

    #[test]
    fn own_shards_are_recognised_by_name() {
        let plain = &WebDataset::PLAIN;
        assert!(is_own_shard("shard-000012.tar", plain, "shard"));
        assert!(is_own_shard("a-1-000000.tar", plain, "a-1"));
        assert!(!is_own_shard("shard-12.tar", plain, "shard"));
        assert!(!is_own_shard("other-000012.tar", plain, "shard"));
        assert!(!is_own_shard("notes.txt", plain, "shard"));
        let gz = &WebDataset {
            compression: Some(shardsmith_shard::webdataset::TarCompression::Gz(6)),
            index: Default::default(),
        };
        assert!(is_own_shard("shard-000012.tar.gz", gz, "shard"));
        assert!(!is_own_shard("shard-000012.tar", gz, "shard"));
        assert!(!is_own_shard("shard-000012.tar.gz", plain, "shard"));
    }
}
