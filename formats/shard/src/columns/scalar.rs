//! Scalar values from text as Python parses them (`int()`, `float()`, `Decimal()`), and
//! a numpy scalar's stored bytes.

use super::dtype::ArrayDtype;
use super::error::ValueError;

/// Python `int()` of text: optional sign, digits with single underscores between them.
pub(super) fn parse_int(text: &str) -> Option<i128> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    clean.parse().ok()
}

/// Python `float()` of text (incl. `nan`, `inf`, underscores between digits).
pub(super) fn parse_float(text: &str) -> Option<f64> {
    if text.contains("__") || text.starts_with('_') || text.ends_with('_') {
        return None;
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    let bare = lower.trim_start_matches(['+', '-']);
    if matches!(bare, "nan" | "inf" | "infinity") {
        return lower.replace("infinity", "inf").parse().ok();
    }
    if !bare
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    clean.parse().ok()
}

/// `Decimal()` accepts `[sign] digits [. digits] [e [sign] digits]`, NaN and Infinity.
pub(super) fn is_decimal(text: &str) -> bool {
    let bare = text
        .strip_prefix(['+', '-'])
        .unwrap_or(text)
        .to_ascii_lowercase();
    if matches!(bare.as_str(), "nan" | "snan" | "inf" | "infinity") {
        return true;
    }
    let (mantissa, exponent) = match bare.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (bare.as_str(), None),
    };
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(whole) && digits(frac) && !(whole.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

pub(super) fn scalar(dtype: ArrayDtype, text: &str) -> Result<Vec<u8>, ValueError> {
    let range = |v: i128, lo: i128, hi: i128| -> Result<i128, ValueError> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(ValueError::range(v, dtype))
        }
    };
    let int = || parse_int(text).ok_or_else(|| ValueError::ScalarInteger(text.to_string()));
    let float = || parse_float(text).ok_or_else(|| ValueError::ScalarNumber(text.to_string()));
    Ok(match dtype {
        ArrayDtype::U8 => vec![range(int()?, 0, 255)? as u8],
        ArrayDtype::I8 => vec![range(int()?, -128, 127)? as i8 as u8],
        ArrayDtype::U16 => (range(int()?, 0, 65535)? as u16).to_le_bytes().to_vec(),
        ArrayDtype::I16 => (range(int()?, -32768, 32767)? as i16)
            .to_le_bytes()
            .to_vec(),
        ArrayDtype::U32 => (range(int()?, 0, u32::MAX.into())? as u32)
            .to_le_bytes()
            .to_vec(),
        ArrayDtype::I32 => (range(int()?, i32::MIN.into(), i32::MAX.into())? as i32)
            .to_le_bytes()
            .to_vec(),
        ArrayDtype::U64 => (range(int()?, 0, u64::MAX.into())? as u64)
            .to_le_bytes()
            .to_vec(),
        ArrayDtype::I64 => (range(int()?, i64::MIN.into(), i64::MAX.into())? as i64)
            .to_le_bytes()
            .to_vec(),
        ArrayDtype::F16 => half::f16::from_f64(float()?).to_le_bytes().to_vec(),
        ArrayDtype::F32 => (float()? as f32).to_le_bytes().to_vec(),
        ArrayDtype::F64 => float()?.to_le_bytes().to_vec(),
    })
}
