//! Hand-written pre-tokenizers, one per OpenAI split pattern. Each is a small state
//! machine that returns, for a position in the text, where the regex's next match ends:
//! the same pieces as the pattern (leftmost-first alternation, greedy and possessive
//! quantifiers, the `\s+(?!\S)` lookahead), without a regex engine. The tests compare
//! them with `fancy-regex` running the original patterns.

use super::classes::{LETTER, LOWER, NUMBER, SPACE, UPPER, decode, table};

/// The split patterns of the OpenAI encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// GPT-2, r50k_base and p50k_base.
    R50k,
    /// cl100k_base.
    Cl100k,
    /// o200k_base.
    O200k,
}

/// The patterns exactly as Python tiktoken 0.14 writes them (the test oracle).
pub const R50K_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";
/// cl100k_base's pattern.
pub const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// o200k_base's pattern.
pub const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+"
);

impl Pattern {
    /// The original regular expression.
    pub fn regex(self) -> &'static str {
        match self {
            Pattern::R50k => R50K_PATTERN,
            Pattern::Cl100k => CL100K_PATTERN,
            Pattern::O200k => O200K_PATTERN,
        }
    }

    /// Calls `piece` with every piece of `text`, in order; the pieces concatenate to
    /// `text`.
    #[inline]
    pub fn split<'t>(self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        let s = Scanner {
            s: text.as_bytes(),
            t: table(),
        };
        let mut i = 0;
        while i < text.len() {
            let end = match self {
                Pattern::R50k => s.r50k(i),
                Pattern::Cl100k => s.cl100k(i),
                Pattern::O200k => s.o200k(i),
            };
            debug_assert!(end > i && text.is_char_boundary(end));
            piece(&text[i..end]);
            i = end;
        }
    }
}

/// "Other": not `\s`, `\p{L}` or `\p{N}`.
const OTHER_MASK: u8 = SPACE | LETTER | NUMBER;

/// Which pattern's white-space alternatives apply.
#[derive(Clone, Copy)]
enum Space {
    R50k,
    Cl100k,
    O200k,
}

struct Scanner<'a> {
    s: &'a [u8],
    t: &'a [u8],
}

impl Scanner<'_> {
    /// (flags, code point, length) of the character at `i`.
    #[inline(always)]
    fn at(&self, i: usize) -> (u8, u32, usize) {
        let (c, n) = decode(self.s, i);
        (self.t[c as usize], c, n)
    }

    /// Flags of the character at `i`, or `None` at the end.
    #[inline(always)]
    fn flags(&self, i: usize) -> Option<u8> {
        (i < self.s.len()).then(|| self.at(i).0)
    }

    /// End of the run of characters from `i` whose flags satisfy `keep`.
    #[inline(always)]
    fn run(&self, mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
        while i < self.s.len() {
            let b = self.s[i];
            if b < 0x80 {
                if !keep(self.t[b as usize]) {
                    break;
                }
                i += 1;
            } else {
                let (f, _, n) = self.at(i);
                if !keep(f) {
                    break;
                }
                i += n;
            }
        }
        i
    }

    #[inline(always)]
    fn others(&self, i: usize) -> usize {
        self.run(i, |f| f & OTHER_MASK == 0)
    }

    /// `\p{N}{1,3}` after the first number, which ends at `j`.
    #[inline]
    fn digits3(&self, mut j: usize) -> usize {
        for _ in 0..2 {
            match self.flags(j) {
                Some(g) if g & NUMBER != 0 => j += self.at(j).2,
                _ => break,
            }
        }
        j
    }

    /// ` ?[^\s\p{L}\p{N}]+` then a run of ASCII bytes `tail` accepts (cl100k `[\r\n]*`,
    /// o200k `[\r\n/]*`), at `i` whose character is `c` with flags `f`.
    #[inline]
    fn punctuation(&self, i: usize, f: u8, c: u32, tail: impl Fn(u8) -> bool) -> Option<usize> {
        let start =
            if c == u32::from(b' ') && self.flags(i + 1).is_some_and(|g| g & OTHER_MASK == 0) {
                i + 1
            } else if f & OTHER_MASK == 0 {
                i
            } else {
                return None;
            };
        let j = self.others(start);
        Some(j + self.s[j..].iter().take_while(|&&b| tail(b)).count())
    }

    /// `(?i:x)` for one ASCII letter `x` at `i`: the letter in either case, and the
    /// long s `ſ` for `s` (Unicode simple case folding). Returns the end.
    #[inline]
    fn letter_ci(&self, i: usize, x: u8) -> Option<usize> {
        let b = *self.s.get(i)?;
        if b.to_ascii_lowercase() == x {
            return Some(i + 1);
        }
        (x == b's' && self.s[i..].starts_with("ſ".as_bytes())).then_some(i + 2)
    }

    /// A contraction after the apostrophe at `i`: `'s 't 're 've 'm 'll 'd`, with the
    /// letters case-insensitive when `ci`. Returns the end.
    #[inline]
    fn contraction(&self, i: usize, ci: bool) -> Option<usize> {
        if self.s.get(i) != Some(&b'\'') {
            return None;
        }
        let one = |x: u8, at: usize| -> Option<usize> {
            if ci {
                self.letter_ci(at, x)
            } else {
                (self.s.get(at) == Some(&x)).then_some(at + 1)
            }
        };
        let j = i + 1;
        for x in [b's', b'd', b'm', b't'] {
            if let Some(end) = one(x, j) {
                return Some(end);
            }
        }
        for (a, b) in [(b'l', b'l'), (b'v', b'e'), (b'r', b'e')] {
            if let Some(mid) = one(a, j)
                && let Some(end) = one(b, mid)
            {
                return Some(end);
            }
        }
        None
    }

    /// The white-space alternatives, at a white-space character `i` (length `n`):
    /// r50k `\s++$|\s+(?!\S)|\s`; cl100k `\s++$|\s*[\r\n]|\s+(?!\S)|\s`; o200k
    /// `\s*[\r\n]+|\s+(?!\S)|\s+` (where `\s+` is one character, as `\s+(?!\S)` took
    /// every longer run).
    #[inline]
    fn space(&self, i: usize, n: usize, ws: Space) -> usize {
        let mut j = i + n;
        let mut last = i;
        let mut last_newline = None;
        if matches!(self.s[i], b'\r' | b'\n') {
            last_newline = Some(i);
        }
        while j < self.s.len() {
            let (f, c, m) = self.at(j);
            if f & SPACE == 0 {
                break;
            }
            if c == u32::from(b'\r') || c == u32::from(b'\n') {
                last_newline = Some(j);
            }
            last = j;
            j += m;
        }
        let at_end = j == self.s.len();
        match (ws, last_newline) {
            (Space::Cl100k, Some(p)) if !at_end => return p + 1,
            (Space::O200k, Some(p)) => return p + 1,
            _ => {}
        }
        if at_end {
            j
        } else if last > i {
            last
        } else {
            i + n
        }
    }

    /// `'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s`
    fn r50k(&self, i: usize) -> usize {
        if let Some(end) = self.contraction(i, false) {
            return end;
        }
        let (f, c, n) = self.at(i);
        let (start, f) = if c == u32::from(b' ') {
            match self.flags(i + 1) {
                Some(g) if g & SPACE == 0 => (i + 1, g),
                _ => return self.space(i, n, Space::R50k),
            }
        } else {
            (i, f)
        };
        if f & LETTER != 0 {
            self.run(start, |f| f & LETTER != 0)
        } else if f & NUMBER != 0 {
            self.run(start, |f| f & NUMBER != 0)
        } else if f & SPACE == 0 {
            self.others(start)
        } else {
            self.space(i, n, Space::R50k)
        }
    }

    /// `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
    /// ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
    fn cl100k(&self, i: usize) -> usize {
        if let Some(end) = self.contraction(i, true) {
            return end;
        }
        let (f, c, n) = self.at(i);
        if f & LETTER != 0 {
            return self.run(i + n, |f| f & LETTER != 0);
        }
        let newline = c == u32::from(b'\r') || c == u32::from(b'\n');
        if !newline && f & NUMBER == 0 && self.flags(i + n).is_some_and(|g| g & LETTER != 0) {
            return self.run(i + n, |f| f & LETTER != 0);
        }
        if f & NUMBER != 0 {
            return self.digits3(i + n);
        }
        if let Some(end) = self.punctuation(i, f, c, |b| matches!(b, b'\r' | b'\n')) {
            return end;
        }
        self.space(i, n, Space::Cl100k)
    }

    /// o200k's letter alternatives from `start`: `U*W+` (`lower_required`) or `U+W*`,
    /// then an optional contraction. Returns the end.
    #[inline]
    fn o200k_word(&self, start: usize, lower_required: bool) -> Option<usize> {
        let mut e = start;
        let mut last_lower_end = None;
        while e < self.s.len() {
            let (f, _, m) = self.at(e);
            if f & UPPER == 0 {
                break;
            }
            e += m;
            if f & LOWER != 0 {
                last_lower_end = Some(e);
            }
        }
        let end = if lower_required {
            match self.flags(e) {
                Some(g) if g & LOWER != 0 => self.run(e, |f| f & LOWER != 0),
                _ => last_lower_end?,
            }
        } else {
            if e == start {
                return None;
            }
            self.run(e, |f| f & LOWER != 0)
        };
        Some(self.contraction(end, true).unwrap_or(end))
    }

    fn o200k(&self, i: usize) -> usize {
        let (f, c, n) = self.at(i);
        let newline = c == u32::from(b'\r') || c == u32::from(b'\n');
        let prefix = !newline && f & (LETTER | NUMBER) == 0;
        for lower_required in [true, false] {
            if prefix && let Some(end) = self.o200k_word(i + n, lower_required) {
                return end;
            }
            if let Some(end) = self.o200k_word(i, lower_required) {
                return end;
            }
        }
        if f & NUMBER != 0 {
            return self.digits3(i + n);
        }
        if let Some(end) = self.punctuation(i, f, c, |b| matches!(b, b'\r' | b'\n' | b'/')) {
            return end;
        }
        self.space(i, n, Space::O200k)
    }
}

#[cfg(test)]
mod tests;
