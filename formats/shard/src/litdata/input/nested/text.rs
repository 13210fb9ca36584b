//! JSON text written again in the shape of [`crate::parquet::nested`]: compact, object
//! keys in their order, strings as `serde_json` escapes them, integers as their digits,
//! other numbers parsed exactly (Rust's `f64` parsing rounds correctly; `serde_json`'s
//! default does not always) and written in their shortest form, NaN and infinities
//! (Python's `json.dumps` writes `NaN`, `Infinity`, `-Infinity`) the strings
//! `"NaN"`, `"Infinity"`, `"-Infinity"`. So text from a footer reads back to itself, and
//! text litdata wrote reads as the same value read any other way.

use arrow_array::Float64Array;

use crate::mds::input::problem::Problem;
use crate::parquet::nested;

/// Deepest nesting read, binary and JSON text together (twice `serde_json`'s limit; a
/// bound on the stack a damaged value can take).
pub const MAX_DEPTH: usize = 256;

/// A damaged `json` value, `why` as its text.
pub(super) fn corrupt(why: &str) -> Problem {
    Problem::Corrupt(format!("{why} (LitData's `json` serializer)"))
}

pub(super) fn string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec");
}

pub(super) fn float(out: &mut Vec<u8>, x: f64) {
    let one = Float64Array::from(vec![x]);
    nested::to_json(&one, 0, out).expect("a float is JSON");
}

pub(super) fn boolean(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(if b != 0 { b"true" } else { b"false" });
}

/// Writes the JSON text `text` (one value, whitespace around it allowed), found at
/// nesting `depth`, again.
pub(super) fn json_text(text: &[u8], out: &mut Vec<u8>, depth: usize) -> Result<(), Problem> {
    let mut p = Text { s: text, at: 0 };
    p.value(out, depth)?;
    p.space();
    if p.at != text.len() {
        return Err(p.bad("more after its value"));
    }
    Ok(())
}

struct Text<'a> {
    s: &'a [u8],
    at: usize,
}

impl Text<'_> {
    fn bad(&self, what: &str) -> Problem {
        corrupt(&format!(
            "holds JSON text that does not read: {what} at byte {}",
            self.at
        ))
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn word(&mut self, word: &[u8]) -> bool {
        let found = self.s.get(self.at..self.at + word.len()) == Some(word);
        if found {
            self.at += word.len();
        }
        found
    }

    fn value(&mut self, out: &mut Vec<u8>, depth: usize) -> Result<(), Problem> {
        if depth > MAX_DEPTH {
            return Err(corrupt(&format!("nests deeper than {MAX_DEPTH} levels")));
        }
        self.space();
        match self.peek() {
            Some(b'{') => self.container(out, depth, b'}'),
            Some(b'[') => self.container(out, depth, b']'),
            Some(b'"') => {
                let text = self.string()?;
                string(out, &text);
                Ok(())
            }
            _ if self.word(b"true") => {
                out.extend_from_slice(b"true");
                Ok(())
            }
            _ if self.word(b"false") => {
                out.extend_from_slice(b"false");
                Ok(())
            }
            _ if self.word(b"null") => {
                out.extend_from_slice(b"null");
                Ok(())
            }
            _ if self.word(b"NaN") => {
                float(out, f64::NAN);
                Ok(())
            }
            _ if self.word(b"Infinity") => {
                float(out, f64::INFINITY);
                Ok(())
            }
            _ if self.word(b"-Infinity") => {
                float(out, f64::NEG_INFINITY);
                Ok(())
            }
            _ => self.number(out),
        }
    }

    /// An object (`close` `}`) or an array (`]`), from its opening bracket.
    fn container(&mut self, out: &mut Vec<u8>, depth: usize, close: u8) -> Result<(), Problem> {
        out.push(self.peek().unwrap_or_default());
        self.at += 1;
        self.space();
        if self.peek() == Some(close) {
            self.at += 1;
            out.push(close);
            return Ok(());
        }
        loop {
            if close == b'}' {
                self.space();
                if self.peek() != Some(b'"') {
                    return Err(self.bad("an object key that is no string"));
                }
                let key = self.string()?;
                string(out, &key);
                self.space();
                if !self.word(b":") {
                    return Err(self.bad("no `:` after an object key"));
                }
                out.push(b':');
            }
            self.value(out, depth + 1)?;
            self.space();
            match self.peek() {
                Some(b',') => out.push(b','),
                Some(c) if c == close => {
                    self.at += 1;
                    out.push(close);
                    return Ok(());
                }
                _ => return Err(self.bad("no `,` or closing bracket")),
            }
            self.at += 1;
        }
    }

    /// A string token, from its opening quote, unescaped.
    fn string(&mut self) -> Result<String, Problem> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                None => return Err(self.bad("an unterminated string")),
                Some(b'\\') => self.at += 2,
                Some(b'"') => break,
                Some(_) => self.at += 1,
            }
        }
        self.at += 1;
        let token = self.s.get(start..self.at).unwrap_or_default();
        serde_json::from_slice::<String>(token).map_err(|e| self.bad(&e.to_string()))
    }

    /// A number: an integer as its digits, any other number as the `f64` it reads as.
    fn number(&mut self, out: &mut Vec<u8>) -> Result<(), Problem> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.at += 1;
            }
            p.at > from
        };
        self.word(b"-");
        let (from, lead) = (self.at, self.peek());
        if !digits(self) || (lead == Some(b'0') && self.at - from > 1) {
            self.at = start;
            return Err(self.bad("no JSON value"));
        }
        let mut integer = true;
        if self.word(b".") {
            integer = false;
            if !digits(self) {
                return Err(self.bad("a number without digits after `.`"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !digits(self) {
                return Err(self.bad("a number without exponent digits"));
            }
        }
        let token =
            std::str::from_utf8(self.s.get(start..self.at).unwrap_or_default()).unwrap_or_default();
        if integer {
            // `-0` is 0 to Python too.
            out.extend_from_slice(if token == "-0" { "0" } else { token }.as_bytes());
        } else {
            let x: f64 = token
                .parse()
                .map_err(|_| self.bad("a number that does not read"))?;
            float(out, x);
        }
        Ok(())
    }
}
