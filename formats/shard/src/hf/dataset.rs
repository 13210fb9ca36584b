//! The dataset files of a Hugging Face output, written after its shards:
//! `dataset_info.json` (the features) and `state.json` (the shards `load_from_disk`
//! opens, in order, and a `_fingerprint` derived from their content).

use serde_json::{Value, json};
use xxhash_rust::xxh64::Xxh64;

use crate::format::{DatasetFile, DatasetFilesError};

/// `save_to_disk`'s file names, which `load_from_disk` looks for.
pub(super) const INFO: &str = "dataset_info.json";
pub(super) const STATE: &str = "state.json";

/// `dataset_info.json` and `state.json` for `shards` (names and the facts their encoders
/// returned, in order), from the state the format recorded (its features). No time or
/// random number enters them: the fingerprint is a hash of the features and of each
/// shard's name, rows and digest, so equal outputs have equal files.
pub(super) fn dataset_files(
    state: &Value,
    shards: &[(&str, &Value)],
) -> Result<Vec<DatasetFile>, DatasetFilesError> {
    let features = state["features"].as_str().unwrap_or("{}");
    let mut hash = Xxh64::new(0);
    hash.update(features.as_bytes());
    let mut files = Vec::with_capacity(shards.len());
    for (name, facts) in shards {
        let (Some(rows), Some(digest)) = (facts["rows"].as_u64(), facts["xxh64"].as_str()) else {
            return Err(DatasetFilesError::NoRecord((*name).to_string()));
        };
        for part in [name.as_bytes(), &rows.to_le_bytes(), digest.as_bytes()] {
            hash.update(&(part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        files.push(json!({"filename": name}));
    }
    let info = format!(
        "{{\n  \"citation\": \"\",\n  \"description\": \"\",\n  \"features\": {features},\n  \"homepage\": \"\",\n  \"license\": \"\"\n}}"
    );
    let state = json!({
        "_data_files": files,
        "_fingerprint": format!("{:016x}", hash.digest()),
        "_format_columns": null,
        "_format_kwargs": {},
        "_format_type": null,
        "_output_all_columns": false,
        "_split": null,
    });
    let state = serde_json::to_string_pretty(&state).expect("JSON values serialize");
    Ok(vec![
        DatasetFile::new(INFO, info.into_bytes()),
        DatasetFile::new(STATE, state.into_bytes()),
    ])
}
