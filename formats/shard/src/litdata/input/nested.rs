//! LitData's `json` serializer: a list or dict leaf (litdata 0.2.76 `JsonLeaf`) stored
//! in `_nested_dumps`'s binary encoding, given as the JSON text that Parquet and hf
//! inputs give a nested value ([`crate::parquet::nested`]: compact, keys in item order,
//! floats in their shortest form, NaN and infinities the strings `"NaN"`, ...), so one
//! value read from a PyTree item and from an Arrow footer is one field.
//!
//! The encoding (`serializers.py`, `_nested_loads_at`): a first byte above `0x20` means
//! the whole value is JSON text (older litdata). Otherwise a tag byte, then, with `n` a
//! `u32` and a string a `u32` length and its UTF-8 bytes, all little-endian:
//!
//! - `0` JSON: `n`, then `n` bytes of JSON text;
//! - `1` strings, `2` i64s, `3` f64s, `4` bools (a byte each): `n`, then `n` values;
//! - `5` dict: `n`, then `n` times a key string and a value (any tag);
//! - `6` records (a list of dicts of one key set): `n` rows, `k` keys, the `k` key
//!   strings, then per row and key a tag `0x10` none, `0x11` string, `0x12` i64,
//!   `0x13` f64, `0x14` bool (a byte) and its value;
//! - `7` string, `8` i64, `9` f64, `10` bool (a byte), `11` none.
//!
//! A top-level tag that is none of these is JSON text too, as litdata reads it. Bytes
//! after the value, a count the bytes cannot hold, text that is not UTF-8 or not JSON,
//! an unknown tag inside a value, records without keys, or nesting deeper than
//! [`MAX_DEPTH`] are damage. Nothing is allocated from a stated count.

use std::io::Write;

use crate::mds::input::problem::Problem;

pub use self::text::MAX_DEPTH;
use self::text::{boolean, corrupt, float, json_text, string};

/// The JSON text of a `json` leaf's stored bytes.
pub fn to_json(stored: &[u8]) -> Result<Vec<u8>, Problem> {
    let mut out = Vec::with_capacity(stored.len());
    match stored.first() {
        None => return Err(corrupt("is empty, no value of LitData's `json` serializer")),
        Some(&tag) if tag > 0x20 || !known(tag) => json_text(stored, &mut out, 0)?,
        Some(_) => {
            let mut bytes = Bytes { raw: stored, at: 0 };
            value(&mut bytes, &mut out, 0)?;
            if bytes.at != stored.len() {
                return Err(corrupt(&format!(
                    "has {} bytes after its nested value",
                    stored.len() - bytes.at
                )));
            }
        }
    }
    Ok(out)
}

fn known(tag: u8) -> bool {
    tag <= 11
}

/// The stored bytes, read front to back; every read is checked.
struct Bytes<'a> {
    raw: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Problem> {
        let end = self.at.checked_add(n);
        let Some(slice) = end.and_then(|end| self.raw.get(self.at..end)) else {
            return Err(corrupt(&format!(
                "ends inside its nested value: {n} bytes wanted at byte {}, {} left",
                self.at,
                self.raw.len().saturating_sub(self.at)
            )));
        };
        self.at += n;
        Ok(slice)
    }

    fn byte(&mut self) -> Result<u8, Problem> {
        Ok(self.take(1)?.first().copied().unwrap_or_default())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Problem> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn count(&mut self) -> Result<usize, Problem> {
        Ok(u32::from_le_bytes(self.array()?) as usize)
    }

    fn text(&mut self) -> Result<&'a str, Problem> {
        let n = self.count()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| corrupt("holds a string that is not UTF-8"))
    }

    /// `n` values of `size` bytes each, checked to be there before any is read.
    fn values(&mut self, n: usize, size: usize) -> Result<&'a [u8], Problem> {
        let total = n
            .checked_mul(size)
            .ok_or_else(|| corrupt(&format!("states {n} values, more than any item holds")))?;
        self.take(total)
    }
}

fn eight(chunk: &[u8]) -> [u8; 8] {
    let mut a = [0; 8];
    a.copy_from_slice(chunk);
    a
}

/// Writes items `0..n` between brackets, each by `each`.
fn list(
    out: &mut Vec<u8>,
    n: usize,
    mut each: impl FnMut(&mut Vec<u8>) -> Result<(), Problem>,
) -> Result<(), Problem> {
    out.push(b'[');
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        each(out)?;
    }
    out.push(b']');
    Ok(())
}

/// Reads one tagged value at `bytes` and writes its JSON text.
fn value(bytes: &mut Bytes<'_>, out: &mut Vec<u8>, depth: usize) -> Result<(), Problem> {
    if depth > MAX_DEPTH {
        return Err(corrupt(&format!("nests deeper than {MAX_DEPTH} levels")));
    }
    let tag = bytes.byte()?;
    match tag {
        0 => {
            let n = bytes.count()?;
            json_text(bytes.take(n)?, out, depth)?;
        }
        1 => {
            let n = bytes.count()?;
            list(out, n, |out| {
                string(out, bytes.text()?);
                Ok(())
            })?;
        }
        2 | 3 => {
            let n = bytes.count()?;
            let values = bytes.values(n, 8)?;
            out.push(b'[');
            for (i, chunk) in values.chunks_exact(8).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if tag == 2 {
                    write!(out, "{}", i64::from_le_bytes(eight(chunk))).expect("a Vec");
                } else {
                    float(out, f64::from_le_bytes(eight(chunk)));
                }
            }
            out.push(b']');
        }
        4 => {
            let n = bytes.count()?;
            let values = bytes.values(n, 1)?;
            let mut at = 0;
            list(out, n, |out| {
                let b = values.get(at).copied().unwrap_or_default();
                at += 1;
                boolean(out, b);
                Ok(())
            })?;
        }
        5 => {
            let n = bytes.count()?;
            out.push(b'{');
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                string(out, bytes.text()?);
                out.push(b':');
                value(bytes, out, depth + 1)?;
            }
            out.push(b'}');
        }
        6 => records(bytes, out)?,
        7 => string(out, bytes.text()?),
        8 => write!(out, "{}", i64::from_le_bytes(bytes.array()?)).expect("a Vec"),
        9 => float(out, f64::from_le_bytes(bytes.array()?)),
        10 => boolean(out, bytes.byte()?),
        11 => out.extend_from_slice(b"null"),
        other => {
            return Err(corrupt(&format!(
                "has unknown tag {other} at byte {} of its nested value",
                bytes.at - 1
            )));
        }
    }
    Ok(())
}

/// A list of dicts of one key set (tag 6), after its tag.
fn records(bytes: &mut Bytes<'_>, out: &mut Vec<u8>) -> Result<(), Problem> {
    let rows = bytes.count()?;
    let keys = bytes.count()?;
    if keys == 0 && rows > 0 {
        return Err(corrupt(&format!(
            "states {rows} records without keys, which litdata never writes"
        )));
    }
    // The key strings are read again for every row: no list sized by a stated count.
    let first_key = bytes.at;
    for _ in 0..keys {
        bytes.text()?;
    }
    list(out, rows, |out| {
        let mut names = Bytes {
            raw: bytes.raw,
            at: first_key,
        };
        out.push(b'{');
        for k in 0..keys {
            if k > 0 {
                out.push(b',');
            }
            string(out, names.text()?);
            out.push(b':');
            match bytes.byte()? {
                0x10 => out.extend_from_slice(b"null"),
                0x11 => string(out, bytes.text()?),
                0x12 => write!(out, "{}", i64::from_le_bytes(bytes.array()?)).expect("a Vec"),
                0x13 => float(out, f64::from_le_bytes(bytes.array()?)),
                0x14 => boolean(out, bytes.byte()?),
                other => {
                    return Err(corrupt(&format!(
                        "has unknown record tag {other} at byte {}",
                        bytes.at - 1
                    )));
                }
            }
        }
        out.push(b'}');
        Ok(())
    })?;
    Ok(())
}

mod text;

#[cfg(test)]
mod tests;
