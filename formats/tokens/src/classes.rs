//! Character classes the OpenAI pre-tokenizer patterns distinguish, one byte of flags per
//! code point. The tables come from `regex-syntax`, the crate whose Unicode data the
//! reference tokenizers' regex engine uses, so `\p{L}`, `\p{N}` and `\s` mean here exactly
//! what they mean in the patterns.

use std::sync::OnceLock;

use regex_syntax::hir::{Class, HirKind};

/// `\p{L}`: a letter.
pub const LETTER: u8 = 1;
/// `\p{N}`: a number.
pub const NUMBER: u8 = 2;
/// `\s`: Unicode white space.
pub const SPACE: u8 = 4;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` (o200k's "upper" class).
pub const UPPER: u8 = 8;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]` (o200k's "lower" class).
pub const LOWER: u8 = 16;

const CODE_POINTS: usize = 0x11_0000;

/// The flags of every code point.
pub fn table() -> &'static [u8] {
    static TABLE: OnceLock<Box<[u8]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = vec![0u8; CODE_POINTS].into_boxed_slice();
        for (pattern, flag) in [
            (r"\p{L}", LETTER),
            (r"\p{N}", NUMBER),
            (r"\s", SPACE),
            (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UPPER),
            (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LOWER),
        ] {
            let hir = regex_syntax::parse(pattern).expect("class pattern is valid");
            let HirKind::Class(Class::Unicode(class)) = hir.kind() else {
                unreachable!("{pattern} is a Unicode class");
            };
            for range in class.ranges() {
                for c in u32::from(range.start())..=u32::from(range.end()) {
                    table[c as usize] |= flag;
                }
            }
        }
        table
    })
}

/// Decodes the character starting at `i` of valid UTF-8 `s`: (code point, length).
#[inline]
pub fn decode(s: &[u8], i: usize) -> (u32, usize) {
    let b0 = s[i];
    if b0 < 0x80 {
        return (u32::from(b0), 1);
    }
    let cont = |k: usize| u32::from(s[i + k] & 0x3f);
    if b0 < 0xe0 {
        ((u32::from(b0 & 0x1f) << 6) | cont(1), 2)
    } else if b0 < 0xf0 {
        ((u32::from(b0 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            (u32::from(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_of_known_characters() {
        let t = table();
        let f = |c: char| t[c as usize];
        assert_eq!(f('a'), LETTER | LOWER);
        assert_eq!(f('A'), LETTER | UPPER);
        assert_eq!(f('7'), NUMBER);
        assert_eq!(f('²'), NUMBER);
        assert_eq!(f(' '), SPACE);
        assert_eq!(f('\u{a0}'), SPACE);
        assert_eq!(f('\u{85}'), SPACE);
        assert_eq!(
            f('\u{1c}'),
            0,
            "not White_Space although Python's isspace says so"
        );
        assert_eq!(
            f('中'),
            LETTER | UPPER | LOWER,
            "Lo is in both o200k classes"
        );
        assert_eq!(
            f('\u{301}'),
            UPPER | LOWER,
            "a combining mark is not a letter"
        );
        assert_eq!(f('ǅ'), LETTER | UPPER, "titlecase");
        assert_eq!(f('😀'), 0);
        assert_eq!(f('-'), 0);
    }

    #[test]
    fn decode_matches_std() {
        let s = "aé中😀";
        let mut i = 0;
        for c in s.chars() {
            let (cp, n) = decode(s.as_bytes(), i);
            assert_eq!((cp, n), (c as u32, c.len_utf8()));
            i += n;
        }
    }
}
