//! The readers' indexes of a `pack` run, built from the facts the tar writer records per
//! shard ([`FactsBuilder`]): fed each shard as it is committed (the SQLite inserts of
//! Energon's index run while later shards are written), or every shard at once for the
//! final step of a split run.

use serde_json::Value;

use super::files::{IndexKinds, ListingWriter};
use super::listing::Listing;
use crate::format::{DatasetBuilder, DatasetFile, DatasetFilesError};
use crate::webdataset::wids::{self, WIDS_INDEX, WidsShard};

/// The readers' indexes `kinds` asks for, made shard by shard from the tar writer's facts.
pub(crate) struct FactsBuilder {
    kinds: IndexKinds,
    wids: Vec<WidsShard>,
    writer: Option<ListingWriter>,
    files: Vec<DatasetFile>,
}

impl FactsBuilder {
    /// A builder of the indexes `kinds` asks for; Energon's `index.sqlite` is built in the
    /// system's temporary directory.
    pub(crate) fn new(kinds: IndexKinds) -> Result<Self, DatasetFilesError> {
        let writer = if kinds.needs_listing() {
            Some(ListingWriter::new(kinds, &std::env::temp_dir())?)
        } else {
            None
        };
        Ok(Self {
            kinds,
            wids: Vec::new(),
            writer,
            files: Vec::new(),
        })
    }
}

impl DatasetBuilder for FactsBuilder {
    fn add(&mut self, name: &str, facts: &Value) -> Result<(), DatasetFilesError> {
        let missing = || DatasetFilesError::NoRecord(name.to_string());
        if self.kinds.wids {
            let counts = &facts["wids"];
            let (Some(nsamples), Some(filesize)) =
                (counts["nsamples"].as_u64(), counts["filesize"].as_u64())
            else {
                return Err(missing());
            };
            self.wids.push(WidsShard {
                url: name.to_string(),
                nsamples,
                filesize,
            });
        }
        if let Some(writer) = &mut self.writer {
            let listing = facts["listing"]
                .as_str()
                .and_then(Listing::from_compact)
                .ok_or_else(missing)?;
            self.files.extend(writer.add(name, &listing)?);
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<DatasetFile>, DatasetFilesError> {
        let mut files = Vec::new();
        if self.kinds.wids {
            let mut shards = self.wids;
            files.push(DatasetFile::new(WIDS_INDEX, wids::index_bytes(&mut shards)));
        }
        files.extend(self.files);
        if let Some(writer) = self.writer {
            files.extend(writer.finish()?);
        }
        Ok(files)
    }
}

/// The readers' indexes the recorded state asks for (`{"index": [...]}`), from every
/// shard's facts in order (the final step of a split run).
pub(crate) fn index_files(
    state: &Value,
    shards: &[(&str, &Value)],
) -> Result<Vec<DatasetFile>, DatasetFilesError> {
    let kinds = IndexKinds::from_names(&state["index"]);
    if !kinds.any() {
        return Ok(Vec::new());
    }
    let mut builder = Box::new(FactsBuilder::new(kinds)?);
    for (name, facts) in shards {
        builder.add(name, facts)?;
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_without_index_writes_nothing() {
        assert!(index_files(&Value::Null, &[]).unwrap().is_empty());
        let facts = crate::webdataset::wids::shard_facts(3, 4096, None);
        let state = serde_json::json!({"index": ["wids"]});
        let files = index_files(&state, &[("shard-000000.tar", &facts)]).unwrap();
        assert_eq!(files[0].name, WIDS_INDEX);
        let missing = index_files(&state, &[("x.tar", &Value::Null)]);
        assert!(matches!(missing, Err(DatasetFilesError::NoRecord(_))));
    }
}
