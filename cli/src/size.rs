//! Human sizes and counts on the command line: `64MiB`, `1.5GB`, `500k`, `100_000`.

/// A size or count the command line cannot use; the text clap shows after the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadNumber {
    /// No number at all.
    #[error("`{0}` is not a size; examples: 64MiB, 1GB, 500k, 1048576")]
    NoSize(String),
    /// A unit that is none of k, M, G, T, Ki, Mi, Gi, Ti.
    #[error(
        "unknown size unit `{unit}` in `{text}`; use k, M, G, T (×1000) or Ki, Mi, Gi, Ti (×1024)"
    )]
    Unit { unit: String, text: String },
    /// A known unit with more than one trailing `B`.
    #[error("unknown size unit `{unit}` in `{text}`")]
    UnitSuffix { unit: String, text: String },
    /// A number that does not parse.
    #[error("`{0}` is not a size")]
    NotASize(String),
    /// A fraction of a byte.
    #[error("`{0}` is not a whole number of bytes")]
    Fraction(String),
    /// More than 2^64 - 1 bytes.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// A count that is not a whole number.
    #[error("`{0}` is not a whole number (underscores allowed: 100_000)")]
    NotACount(String),
}

/// Parses a byte size: a number (decimal point allowed) and an optional unit. Decimal
/// units `k`, `M`, `G`, `T` (powers of 1000) and binary `Ki`, `Mi`, `Gi`, `Ti` (powers of
/// 1024), with or without a trailing `B`; a bare number is bytes. `_` separators allowed.
pub fn parse_size(text: &str) -> Result<u64, BadNumber> {
    let clean: String = text.trim().chars().filter(|&c| c != '_').collect();
    let split = clean
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(clean.len());
    let (number, unit) = clean.split_at(split);
    if number.is_empty() {
        return Err(BadNumber::NoSize(text.into()));
    }
    let unit = unit.trim();
    let lower = unit.to_ascii_lowercase();
    let multiplier: u64 = match lower.trim_end_matches('b') {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        _ => {
            return Err(BadNumber::Unit {
                unit: unit.into(),
                text: text.into(),
            });
        }
    };
    if lower.len() > 1
        && lower.ends_with('b')
        && lower.trim_end_matches('b').len() + 1 != lower.len()
    {
        return Err(BadNumber::UnitSuffix {
            unit: unit.into(),
            text: text.into(),
        });
    }
    let value = if let Some((whole, frac)) = number.split_once('.') {
        if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
            return Err(BadNumber::NotASize(text.into()));
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole
                .parse()
                .map_err(|_| BadNumber::NotASize(text.into()))?
        };
        let scale = 10u128.pow(frac.len() as u32);
        let frac: u128 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| BadNumber::NotASize(text.into()))?
        };
        let total = (whole * scale + frac) * u128::from(multiplier);
        if !total.is_multiple_of(scale) {
            return Err(BadNumber::Fraction(text.into()));
        }
        total / scale
    } else {
        let whole: u128 = number
            .parse()
            .map_err(|_| BadNumber::NotASize(text.into()))?;
        whole * u128::from(multiplier)
    };
    u64::try_from(value).map_err(|_| BadNumber::TooLarge(text.into()))
}

/// Parses a count with optional `_` separators (`100_000`).
pub fn parse_count(text: &str) -> Result<u64, BadNumber> {
    let clean: String = text.trim().chars().filter(|&c| c != '_').collect();
    clean.parse().map_err(|_| BadNumber::NotACount(text.into()))
}

/// Formats bytes for people: `616.2 MB` (decimal, like `ls -h --si`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        for (text, want) in [
            ("64MiB", 64 << 20),
            ("64mib", 64 << 20),
            ("1GB", 1_000_000_000),
            ("1.5GB", 1_500_000_000),
            ("1.5 GiB", 3 << 29),
            ("500k", 500_000),
            ("500K", 500_000),
            ("256Mi", 256 << 20),
            ("4096", 4096),
            ("1_048_576", 1 << 20),
            ("2T", 2_000_000_000_000),
            ("10B", 10),
        ] {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "MiB",
            "64XB",
            "1.2.3G",
            "1.5",
            "-1",
            "99999999999T",
            "1MiBB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_and_display() {
        assert_eq!(parse_count("100_000"), Ok(100_000));
        assert!(parse_count("1e6").is_err());
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(616_234_000), "616.2 MB");
    }
}
