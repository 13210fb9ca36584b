//! `SHA256SUMS` files in the format `sha256sum -c` reads: `HEX  PATH` per line, with
//! coreutils' escaping (a leading `\` when the path holds `\`, a newline or a carriage
//! return, which are then written `\\`, `\n` and `\r`).

use crate::FileEntry;

/// Renders the checksum lines for `entries`, in their order.
pub fn render(entries: &[FileEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        let needs_escape = entry.path.contains(['\\', '\n', '\r']);
        if needs_escape {
            out.push('\\');
        }
        out.push_str(&entry.sha256);
        out.push_str("  ");
        if needs_escape {
            for c in entry.path.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    c => out.push(c),
                }
            }
        } else {
            out.push_str(&entry.path);
        }
        out.push('\n');
    }
    out
}

/// One parsed line: path and lowercase hex digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SumLine {
    /// The path, unescaped.
    pub path: String,
    /// The SHA-256, lowercase hex.
    pub sha256: String,
}

/// Parses checksum text. Errors carry the 1-based line number and the reason.
pub fn parse(text: &str) -> Result<Vec<SumLine>, (usize, String)> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        if raw.is_empty() {
            continue;
        }
        let (escaped, line) = match raw.strip_prefix('\\') {
            Some(rest) => (true, rest),
            None => (false, raw),
        };
        let Some((digest, rest)) = line.split_at_checked(64) else {
            return Err((number, "line is shorter than a SHA-256 digest".into()));
        };
        if !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err((number, "digest is not 64 hex digits".into()));
        }
        let name = rest
            .strip_prefix("  ")
            .or_else(|| rest.strip_prefix(" *"))
            .ok_or((
                number,
                "expected two spaces between digest and path".to_string(),
            ))?;
        let path = if escaped {
            unescape(name).ok_or((number, "bad escape sequence in path".to_string()))?
        } else {
            name.to_string()
        };
        lines.push(SumLine {
            path,
            sha256: digest.to_ascii_lowercase(),
        });
    }
    Ok(lines)
}

fn unescape(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Digester;

    fn entry(path: &str) -> FileEntry {
        let mut d = Digester::new(1 << 20);
        d.update(path.as_bytes());
        FileEntry::new(path, &d.finish())
    }

    #[test]
    fn round_trip_with_escapes() {
        let entries = vec![
            entry("shard-000000.tar"),
            entry("odd\\name\nx"),
            entry("é b.tar"),
        ];
        let text = render(&entries);
        assert!(text.lines().nth(1).unwrap().starts_with('\\'));
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed.len(), 3);
        for (line, entry) in parsed.iter().zip(&entries) {
            assert_eq!(line.path, entry.path);
            assert_eq!(line.sha256, entry.sha256);
        }
    }

    #[test]
    fn binary_mode_marker_and_errors() {
        let hex = "a".repeat(64);
        assert_eq!(parse(&format!("{hex} *f\n")).unwrap()[0].path, "f");
        assert_eq!(parse("abc  f\n").unwrap_err().0, 1);
        assert_eq!(parse(&format!("\n{hex}x f\n")).unwrap_err().0, 2);
    }
}
