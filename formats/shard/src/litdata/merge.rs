//! The root `index.json` over separately packed LitData parts (`merge OUTPUT PART...`).

use serde_json::{Value, json};

use super::index::INDEX;
use crate::format::{DatasetFile, DatasetFilesError};
use crate::mds::pyjson;

/// The root `index.json` over `parts` (each part's name, then its `index.json`): every
/// part's chunks in part order, named under the part's directory (LitData joins a
/// chunk's filename to the dataset's directory), with the writer config every part must
/// share (one data format and item layout for the whole dataset).
pub(crate) fn merged_index(
    parts: &[(&str, Vec<Vec<u8>>)],
) -> Result<Vec<DatasetFile>, DatasetFilesError> {
    let bad = |part: &str, why: String| DatasetFilesError::Parts(format!("part `{part}`: {why}"));
    let mut chunks = Vec::new();
    let mut config: Option<(&str, Value)> = None;
    for (part, bytes) in parts {
        let [index] = &bytes[..] else {
            return Err(bad(part, format!("needs its {INDEX}")));
        };
        let index: Value = serde_json::from_slice(index)
            .map_err(|e| bad(part, format!("{INDEX} is not JSON: {e}")))?;
        match &config {
            None => config = Some((part, index["config"].clone())),
            Some((name, want)) if *want != index["config"] => {
                return Err(bad(
                    part,
                    format!(
                        "its {INDEX} config (data format, item layout, chunk size) differs from part `{name}`'s"
                    ),
                ));
            }
            Some(_) => {}
        }
        let Some(list) = index["chunks"].as_array() else {
            return Err(bad(part, format!("{INDEX} lists no chunks")));
        };
        for chunk in list {
            let Some(name) = chunk["filename"].as_str() else {
                return Err(bad(part, format!("{INDEX} has a chunk without a filename")));
            };
            let mut chunk = chunk.clone();
            chunk["filename"] = Value::from(format!("{part}/{name}"));
            chunks.push(chunk);
        }
    }
    let Some((_, config)) = config else {
        return Ok(Vec::new());
    };
    let index = json!({"chunks": chunks, "config": config});
    Ok(vec![DatasetFile::new(
        INDEX,
        pyjson::dumps(&index).into_bytes(),
    )])
}
