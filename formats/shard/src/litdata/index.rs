//! The dataset's `index.json`: its name, how LitData's is told from MDS's, and building it
//! from the written chunks.

use serde_json::{Value, json};

use crate::format::{DatasetFile, DatasetFilesError};
use crate::mds::pyjson;

/// The index at the root of a LitData dataset.
pub const INDEX: &str = "index.json";

/// True when `index` is the `index.json` of a LitData dataset: `chunks` and a `config`
/// that names a `data_spec` or an `item_loader` (MDS indexes have `shards`).
pub fn is_litdata_index(index: &Value) -> bool {
    index["chunks"].is_array()
        && index["config"]
            .as_object()
            .is_some_and(|c| c.contains_key("data_spec") || c.contains_key("item_loader"))
}

/// `index.json` for `shards` (names and facts, in order) written with the writer config
/// `config`, as `litdata.optimize` merges it (`json.dump(..., sort_keys=True)`), without
/// its `updated_at` time (the bytes stay the same for the same samples).
pub(crate) fn index_files(
    config: &Value,
    shards: &[(&str, &Value)],
) -> Result<Vec<DatasetFile>, DatasetFilesError> {
    let mut chunks = Vec::with_capacity(shards.len());
    for (name, facts) in shards {
        if facts["chunk_bytes"].is_null() || facts["chunk_size"].is_null() {
            return Err(DatasetFilesError::NoRecord((*name).to_string()));
        }
        chunks.push(json!({
            "chunk_bytes": facts["chunk_bytes"],
            "chunk_size": facts["chunk_size"],
            "dim": null,
            "filename": name,
        }));
    }
    let index = json!({"chunks": chunks, "config": config});
    Ok(vec![DatasetFile::new(
        INDEX,
        pyjson::dumps(&index).into_bytes(),
    )])
}
