//! Brace expansion of shard URLs as Python's `braceexpand` (webdataset's) does it:
//! `{a,b}` alternatives, `{000..146}` integer ranges (zero padded to the wider end when
//! either end has a leading zero), `{a..e}` letter ranges (in `A..Za..z` order),
//! `{1..9..2}` steps (sign ignored), ranges counting down, nesting, `\{` escapes; a brace with neither comma nor range (`{x}`)
//! is kept literally. Unbalanced braces are an error rather than literal text.

/// Most names one pattern may expand to.
const MAX_NAMES: usize = 10_000_000;

/// The letters of letter ranges, in `braceexpand`'s order.
const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Why a brace pattern cannot be expanded; the text completes "input `pattern` ...".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BraceError {
    /// The pattern is empty.
    #[error("is empty")]
    Empty,
    /// A `}` that closes nothing (at this character, 1-based).
    #[error("has a `}}` without its `{{` at character {0}")]
    UnopenedClose(usize),
    /// A `{` never closed (at this character, 1-based).
    #[error("has a `{{` at character {0} that is never closed")]
    Unclosed(usize),
    /// A range of too many names.
    #[error("has the range `{{{body}}}` of {count} names (at most {MAX_NAMES})")]
    RangeTooLong {
        /// The range, without its braces.
        body: String,
        /// Names it has.
        count: i128,
    },
    /// A pattern of too many names.
    #[error("expands to more than {MAX_NAMES} names")]
    TooMany,
}

enum Part {
    Text(String),
    /// Alternatives, each a sequence of parts.
    Choice(Vec<Vec<Part>>),
}

/// Parses `chars[*at..]` up to an unmatched `}` (when `inner`) or the end. An unclosed
/// `{` is `Ok(None)`: the caller names the brace.
fn parse(
    chars: &[char],
    at: &mut usize,
    inner: bool,
) -> Result<Option<Vec<Vec<Part>>>, BraceError> {
    let mut alternatives = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    let mut text = String::new();
    while *at < chars.len() {
        let c = chars[*at];
        *at += 1;
        match c {
            '\\' if *at < chars.len() => {
                text.push(chars[*at]);
                *at += 1;
            }
            ',' if inner => {
                parts.push(Part::Text(std::mem::take(&mut text)));
                alternatives.push(std::mem::take(&mut parts));
            }
            '}' if inner => {
                parts.push(Part::Text(text));
                alternatives.push(parts);
                return Ok(Some(alternatives));
            }
            '}' => return Err(BraceError::UnopenedClose(*at)),
            '{' => {
                let open = *at - 1;
                let body_start = *at;
                let inner_alts = parse(chars, at, true)?.ok_or(BraceError::Unclosed(open + 1))?;
                parts.push(Part::Text(std::mem::take(&mut text)));
                let body: String = chars[body_start..*at - 1].iter().collect();
                if inner_alts.len() > 1 {
                    parts.push(Part::Choice(inner_alts));
                } else if let Some(range) = range(&body)? {
                    parts.push(Part::Choice(
                        range.into_iter().map(|t| vec![Part::Text(t)]).collect(),
                    ));
                } else {
                    // No comma and no range: literal braces around the (expanded) body.
                    let mut literal = vec![Part::Text("{".into())];
                    literal.extend(inner_alts.into_iter().flatten());
                    literal.push(Part::Text("}".into()));
                    parts.push(Part::Choice(vec![literal]));
                }
            }
            c => text.push(c),
        }
    }
    if inner {
        // Unclosed: the caller names the brace.
        return Ok(None);
    }
    parts.push(Part::Text(text));
    alternatives.push(parts);
    Ok(Some(alternatives))
}

fn number(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// The names of `{a..b}` / `{a..b..step}`, `None` when `body` is no range.
fn range(body: &str) -> Result<Option<Vec<String>>, BraceError> {
    let ends: Vec<&str> = body.split("..").collect();
    if !(2..=3).contains(&ends.len()) {
        return Ok(None);
    }
    // The step's sign is ignored (the direction comes from the ends), 0 is 1.
    let step = match ends.get(2) {
        Some(s) => match number(s) {
            Some(0) => 1,
            Some(n) => n.saturating_abs(),
            None => return Ok(None),
        },
        None => 1,
    };
    // Letters count in `A..Z a..z` order, so `{a..C}` runs a, Z, Y, ... C.
    let letter = |s: &str| {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => ALPHABET.find(c).map(|i| i as i64),
            _ => None,
        }
    };
    let (start, end, pad, chars) = match (number(ends[0]), number(ends[1])) {
        (Some(a), Some(b)) => {
            let zero =
                |s: &str| s != "0" && s != "-0" && (s.starts_with('0') || s.starts_with("-0"));
            let pad = if zero(ends[0]) || zero(ends[1]) {
                ends[0].len().max(ends[1].len())
            } else {
                0
            };
            (a, b, pad, false)
        }
        _ => match (letter(ends[0]), letter(ends[1])) {
            (Some(a), Some(b)) => (a, b, 0, true),
            _ => return Ok(None),
        },
    };
    // Python's range(start, end + 1, step) upwards, range(start, end - 1, -step) down.
    let (step, stop) = if start < end {
        (step, end as i128 + 1)
    } else {
        (-step, end as i128 - 1)
    };
    let span = stop - start as i128;
    let count = if (span > 0) == (step > 0) {
        (span.abs() + step.unsigned_abs() as i128 - 1) / step.unsigned_abs() as i128
    } else {
        0
    };
    if count > MAX_NAMES as i128 {
        return Err(BraceError::RangeTooLong {
            body: body.to_string(),
            count,
        });
    }
    let names = (0..count as i64)
        .map(|i| {
            let n = start + i * step;
            if chars {
                ALPHABET[n as usize..n as usize + 1].to_string()
            } else {
                format!("{n:0pad$}")
            }
        })
        .collect();
    Ok(Some(names))
}

/// Appends every expansion of `seq` to each of `prefixes`.
fn expand_seq(prefixes: Vec<String>, seq: &[Part]) -> Result<Vec<String>, BraceError> {
    let mut out = prefixes;
    for part in seq {
        out = match part {
            Part::Text(t) => out.into_iter().map(|p| p + t).collect(),
            Part::Choice(alternatives) => {
                let mut next = Vec::new();
                for prefix in out {
                    for alt in alternatives {
                        next.extend(expand_seq(vec![prefix.clone()], alt)?);
                        if next.len() > MAX_NAMES {
                            return Err(BraceError::TooMany);
                        }
                    }
                }
                next
            }
        };
    }
    Ok(out)
}

/// Expands a brace pattern (`shard-{000000..000146}.tar`, `{a,b}`, nested) into names,
/// in order; zero padding kept as Python's `braceexpand` keeps it.
pub fn expand_braces(pattern: &str) -> Result<Vec<String>, BraceError> {
    if pattern.is_empty() {
        return Err(BraceError::Empty);
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut at = 0;
    let top = parse(&chars, &mut at, false)?.expect("only an inner parse is unclosed");
    let mut names = Vec::new();
    for alt in &top {
        names.extend(expand_seq(vec![String::new()], alt)?);
    }
    Ok(names)
}
