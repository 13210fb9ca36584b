//! The dataset's `index.json`, built from the facts of the written shards.

use serde_json::{Value, json};

use super::codec::MdsCompression;
use super::pyjson;
use crate::Result;
use crate::format::{DatasetFile, DatasetFilesError};

/// `index.json` for `shards` (names and facts, in order) written with the writer config
/// `config`: what [`ShardFormat::dataset_files`](crate::format::ShardFormat::dataset_files) writes, also from a config recorded by
/// the tasks of a split run ([`ShardFormat::dataset_state`](crate::format::ShardFormat::dataset_state)).
pub(crate) fn index_files(
    config: &Value,
    shards: &[(&str, &Value)],
) -> Result<Vec<DatasetFile>, DatasetFilesError> {
    let compression = match config["compression"].as_str() {
        Some(text) => MdsCompression::parse(text)?,
        None => None,
    };
    let mut entries = Vec::with_capacity(shards.len());
    for (name, facts) in shards {
        let mut entry = config.clone();
        let raw_name = match compression {
            Some(c) => name
                .strip_suffix(&format!(".{}", c.family.name()))
                .unwrap_or(name)
                .to_string(),
            None => (*name).to_string(),
        };
        entry["samples"] = facts["samples"].clone();
        entry["raw_data"] = json!({"basename": raw_name, "bytes": facts["raw_bytes"], "hashes": facts["raw_hashes"]});
        entry["zip_data"] = match compression {
            Some(_) => {
                json!({"basename": name, "bytes": facts["zip_bytes"], "hashes": facts["zip_hashes"]})
            }
            None => Value::Null,
        };
        if entry["raw_data"]["bytes"].is_null() {
            return Err(DatasetFilesError::NoRecord((*name).to_string()));
        }
        entries.push(entry);
    }
    let index = json!({"shards": entries, "version": 2});
    Ok(vec![DatasetFile::new(
        "index.json",
        pyjson::dumps(&index).into_bytes(),
    )])
}
