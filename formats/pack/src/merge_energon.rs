//! The root Energon index of merged WebDataset parts: when every part holds Energon's
//! `.nv-meta/` (`pack --index energon`), the merge writes one at the root over every
//! part's shards, built from the parts' `index.sqlite` (no shard is read again). Each
//! shard's `.tar.idx` stays valid where it is, beside the shard.

use std::collections::BTreeMap;

use serde_json::Value;
use shardsmith_manifest::FileEntry;
use shardsmith_shard::webdataset::readers::energon::NV_META;
use shardsmith_shard::webdataset::readers::{IndexKinds, ListingWriter, sqlite};
use shardsmith_store::OutputSink;

use crate::{Error, Result};

/// Writes the root `.nv-meta/` of `parts` into `sink` when every part has one; returns
/// the files written (none when a part has no Energon index).
pub(crate) fn root_energon(sink: &dyn OutputSink, parts: &[String]) -> Result<Vec<FileEntry>> {
    let meta = |part: &str, file: &str| format!("{part}/{NV_META}/{file}");
    for part in parts {
        if sink.size(&meta(part, "index.sqlite"))?.is_none() {
            return Ok(Vec::new());
        }
    }
    // Energon numbers shards in the order of their paths: parts by name as text (`10`
    // before `2`), then each part's shards in its own order.
    let mut ordered: Vec<&String> = parts.iter().collect();
    ordered.sort();
    let scratch = tempfile::tempdir().map_err(|e| Error::io("making", std::env::temp_dir(), e))?;
    let kinds = IndexKinds {
        energon: true,
        ..IndexKinds::default()
    };
    let bad =
        |part: &str, why: String| Error::Merge(format!("part `{part}`: Energon's index: {why}"));
    let mut writer =
        ListingWriter::new(kinds, scratch.path()).map_err(|e| bad("", e.to_string()))?;
    for part in ordered {
        let info: Value = sink
            .read(&meta(part, ".info.json"))?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| bad(part, ".info.json is missing or not JSON".into()))?;
        let names: Vec<String> = info["shard_counts"]
            .as_object()
            .ok_or_else(|| bad(part, ".info.json has no shard_counts".into()))?
            .keys()
            .cloned()
            .collect();
        let bytes = sink
            .read(&meta(part, "index.sqlite"))?
            .ok_or_else(|| bad(part, "index.sqlite vanished".into()))?;
        let copy = scratch.path().join("part.sqlite");
        std::fs::write(&copy, &bytes).map_err(|e| Error::io("writing", &copy, e))?;
        let mut listings: BTreeMap<i64, _> =
            sqlite::read_listings(&copy).map_err(|e| bad(part, e.to_string()))?;
        for (id, name) in names.iter().enumerate() {
            let listing = listings.remove(&(id as i64)).unwrap_or_default();
            // The shard's own files (.tar.idx) are the part's, already beside it.
            writer
                .add(&format!("{part}/{name}"), &listing)
                .map_err(|e| bad(part, e.to_string()))?;
        }
    }
    let mut entries = Vec::new();
    for file in writer.finish().map_err(|e| bad("", e.to_string()))? {
        entries.push(file.write_to(sink)?);
    }
    Ok(entries)
}
