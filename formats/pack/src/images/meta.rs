//! What a sample learns about its images: width, height, original width and height and
//! the format decoded, as img2dataset writes them into each sample's JSON (WebDataset),
//! or as typed columns (MDS, Parquet).

use serde_json::{Map, Value};
use shardsmith_image::Transformed;

/// The metadata names of one image field: plain for the sample's first image, prefixed
/// with the field's stem (`seg_width`) for the others.
pub(crate) fn entries(prefix: &str, t: &Transformed) -> Vec<(String, Value)> {
    let name = |n: &str| format!("{prefix}{n}");
    vec![
        (name("width"), Value::from(t.width)),
        (name("height"), Value::from(t.height)),
        (name("original_width"), Value::from(t.original_width)),
        (name("original_height"), Value::from(t.original_height)),
        (name("source_format"), Value::from(t.source.name())),
    ]
}

/// The prefix of an image field's metadata: none for the first image, else the stem.
pub(crate) fn prefix(first: bool, ext: &str) -> String {
    if first {
        return String::new();
    }
    let stem = ext.rsplit_once('.').map_or(ext, |(stem, _)| stem);
    format!("{}_", stem.replace('.', "_"))
}

/// Why the image sizes cannot be added to a sample's JSON: the reason it is left out.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    /// The JSON is another kind of value.
    #[error("its JSON is {0}, not an object, so the image sizes cannot be added to it")]
    NotAnObject(&'static str),
    /// The field is empty.
    #[error("is empty, which is not valid JSON")]
    Empty,
    /// The field is not JSON.
    #[error("is not valid JSON: {0}")]
    Invalid(serde_json::Error),
    /// The object could not be written again.
    #[error("{0}")]
    Written(serde_json::Error),
}

/// `json` (a sample's JSON text) with `entries` added. The text is kept as written and
/// the entries appended inside its object; if it already has any of those keys it is
/// written anew (keys sorted) with the new values. Not an object: an error.
pub(crate) fn merge(json: &[u8], entries: &[(String, Value)]) -> Result<Vec<u8>, MergeError> {
    let map: Map<String, Value> = match serde_json::from_slice::<Value>(json) {
        Ok(Value::Object(map)) => map,
        Ok(other) => return Err(MergeError::NotAnObject(kind(&other))),
        Err(e) if e.is_eof() && e.line() == 1 && e.column() == 0 => {
            return Err(MergeError::Empty);
        }
        Err(e) => return Err(MergeError::Invalid(e)),
    };
    if entries.iter().any(|(k, _)| map.contains_key(k)) {
        let mut map = map;
        for (k, v) in entries {
            map.insert(k.clone(), v.clone());
        }
        return serde_json::to_vec(&Value::Object(map)).map_err(MergeError::Written);
    }
    // Parsed as an object: after trailing whitespace the text ends with its `}`.
    let end = json
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .expect("an object is not empty text");
    let mut out = Vec::with_capacity(json.len() + 120);
    out.extend_from_slice(&json[..end]);
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 || !map.is_empty() {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(
            &serde_json::to_vec(&Value::from(k.as_str())).expect("a string serializes"),
        );
        out.extend_from_slice(b": ");
        out.extend_from_slice(&serde_json::to_vec(v).expect("a value serializes"));
    }
    out.extend_from_slice(&json[end..]);
    Ok(out)
}

/// A new JSON object of `entries`.
pub(crate) fn object(entries: &[(String, Value)]) -> Vec<u8> {
    merge(b"{}", entries).expect("an empty object takes any entry")
}

/// The text of a metadata value as a field (`256`, `jpeg`).
pub(crate) fn text(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.as_bytes().to_vec(),
        other => other.to_string().into_bytes(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<(String, Value)> {
        vec![
            ("width".into(), Value::from(256)),
            ("height".into(), Value::from(171)),
        ]
    }

    #[test]
    fn merged_text_keeps_the_original_bytes() {
        let out = merge(b"{\"caption\": \"a \\u00e9 cat\", \"n\": 1.50}\n", &sizes()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"caption\": \"a \\u00e9 cat\", \"n\": 1.50, \"width\": 256, \"height\": 171}\n"
        );
        assert_eq!(object(&sizes()), b"{\"width\": 256, \"height\": 171}");
        assert_eq!(
            merge(b" { } ", &sizes()).unwrap(),
            b" { \"width\": 256, \"height\": 171} "
        );
    }

    #[test]
    fn existing_keys_are_replaced() {
        let out = merge(br#"{"width": 1, "z": 2}"#, &sizes()).unwrap();
        assert_eq!(out, br#"{"height":171,"width":256,"z":2}"#);
    }

    #[test]
    fn not_an_object_is_refused() {
        assert!(
            merge(b"[1]", &sizes())
                .unwrap_err()
                .to_string()
                .contains("an array")
        );
        assert!(
            merge(b"{", &sizes())
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
        assert!(
            merge(b"", &sizes())
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix(true, "jpg"), "");
        assert_eq!(prefix(false, "seg.png"), "seg_");
        assert_eq!(prefix(false, "a.b.png"), "a_b_");
    }
}
