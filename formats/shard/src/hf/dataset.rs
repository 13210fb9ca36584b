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
    Ok(vec![
        DatasetFile::new(INFO, info.into_bytes()),
        DatasetFile::new(STATE, pretty(&state)),
    ])
}

fn pretty(value: &Value) -> Vec<u8> {
    serde_json::to_string_pretty(value)
        .expect("JSON values serialize")
        .into_bytes()
}

/// The root `state.json` and `dataset_info.json` over separately packed parts (each
/// part's name, then its `state.json` and `dataset_info.json`): every part's files in
/// part order, named under the part's directory (`load_from_disk` joins them to the
/// root), and the features, which every part must share. The fingerprint is a hash of
/// the parts' names and fingerprints.
pub(super) fn merged_files(
    parts: &[(&str, Vec<Vec<u8>>)],
) -> Result<Vec<DatasetFile>, DatasetFilesError> {
    let bad = |part: &str, why: String| DatasetFilesError::Parts(format!("part `{part}`: {why}"));
    let mut files = Vec::new();
    let mut hash = Xxh64::new(0);
    let mut first: Option<(&str, Value, &[u8])> = None;
    let mut state_of_first = None;
    for (part, bytes) in parts {
        let [state, info] = &bytes[..] else {
            return Err(bad(part, format!("needs {STATE} and {INFO}")));
        };
        let state: Value = serde_json::from_slice(state)
            .map_err(|e| bad(part, format!("{STATE} is not JSON: {e}")))?;
        let features: Value = serde_json::from_slice::<Value>(info)
            .map_err(|e| bad(part, format!("{INFO} is not JSON: {e}")))?["features"]
            .clone();
        match &first {
            None => first = Some((part, features, info)),
            Some((name, want, _)) if *want != features => {
                return Err(bad(
                    part,
                    format!(
                        "its features differ from part `{name}`'s: a merged dataset has one schema"
                    ),
                ));
            }
            Some(_) => {}
        }
        let Some(data_files) = state["_data_files"].as_array() else {
            return Err(bad(part, format!("{STATE} lists no _data_files")));
        };
        for file in data_files {
            let Some(name) = file["filename"].as_str() else {
                return Err(bad(part, format!("{STATE} has a file without a filename")));
            };
            files.push(json!({"filename": format!("{part}/{name}")}));
        }
        for text in [
            part.as_bytes(),
            state["_fingerprint"].as_str().unwrap_or("").as_bytes(),
        ] {
            hash.update(&(text.len() as u64).to_le_bytes());
            hash.update(text);
        }
        state_of_first.get_or_insert(state);
    }
    let (Some((_, _, info)), Some(mut state)) = (first, state_of_first) else {
        return Ok(Vec::new());
    };
    state["_data_files"] = Value::from(files);
    state["_fingerprint"] = Value::from(format!("{:016x}", hash.digest()));
    Ok(vec![
        DatasetFile::new(INFO, info.to_vec()),
        DatasetFile::new(STATE, pretty(&state)),
    ])
}
