//! The payload's JSON as Python's `json.dumps(value, indent=2)` writes it: keys in the
//! order given, ASCII only.

/// A JSON value with its keys in the order they are written.
pub(super) enum J {
    Str(String),
    Int(u64),
    Bool(bool),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

impl J {
    pub(super) fn s(text: &str) -> J {
        J::Str(text.to_string())
    }

    /// Python's `json.dumps(value, indent=2)` (ensure_ascii, `", "`/`": "` separators).
    pub(super) fn write(&self, out: &mut String, depth: usize) {
        let pad = |out: &mut String, depth: usize| {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', 2 * depth));
        };
        match self {
            J::Str(s) => escape(s, out),
            J::Int(n) => out.push_str(&n.to_string()),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Arr(items) if items.is_empty() => out.push_str("[]"),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    item.write(out, depth + 1);
                }
                pad(out, depth);
                out.push(']');
            }
            J::Obj(members) if members.is_empty() => out.push_str("{}"),
            J::Obj(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    escape(key, out);
                    out.push_str(": ");
                    value.write(out, depth + 1);
                }
                pad(out, depth);
                out.push('}');
            }
        }
    }
}

/// A JSON string as Python writes it with `ensure_ascii`: everything outside space..`~`
/// escaped, astral characters as surrogate pairs.
fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_python_json_dumps() {
        let mut out = String::new();
        escape("d/é\"\\\n\u{1}\u{7f}😀~", &mut out);
        assert_eq!(out, r#""d/\u00e9\"\\\n\u0001\u007f\ud83d\ude00~""#);
    }

    #[test]
    fn integers_are_written_without_a_fraction() {
        let mut out = String::new();
        J::Obj(vec![("shard_size", J::Int(1_000_000_000))]).write(&mut out, 0);
        assert_eq!(out, "{\n  \"shard_size\": 1000000000\n}");
    }
}
