//! JSON written the way Python's `json.dumps(obj, sort_keys=True)` writes it: `", "` and
//! `": "` separators, no indentation, non-ASCII escaped as `\uXXXX` (UTF-16 units), no
//! trailing newline. MDSWriter writes `index.json` and the shard config this way; doing
//! the same makes our files byte-identical to its.

use serde_json::Value;

/// `json.dumps(value, sort_keys=True)`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(key, out);
                out.push_str(": ");
                write(&map[key], out);
            }
            out.push('}');
        }
    }
}

fn string(text: &str, out: &mut String) {
    out.push('"');
    for unit in text.encode_utf16() {
        match unit {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x20..=0x7e => out.push(unit as u8 as char),
            _ => out.push_str(&format!("\\u{unit:04x}")),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_formatting() {
        let v: Value =
            serde_json::from_str(r#"{"b": [1, null, true], "a": "h\u00e9\"\n\u007f😀", "c": {}}"#)
                .unwrap();
        assert_eq!(
            dumps(&v),
            r#"{"a": "h\u00e9\"\n\u007f\ud83d\ude00", "b": [1, null, true], "c": {}}"#
        );
    }
}
