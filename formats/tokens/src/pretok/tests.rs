//! The hand-written pre-tokenizers against `fancy-regex` running the original patterns.

use super::*;

fn oracle(pattern: Pattern, text: &str) -> Vec<String> {
    let re = fancy_regex::Regex::new(pattern.regex()).unwrap();
    re.find_iter(text)
        .map(|m| m.unwrap().as_str().to_string())
        .collect()
}

fn ours(pattern: Pattern, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    pattern.split(text, |p| out.push(p.to_string()));
    out
}

const ALL: [Pattern; 3] = [Pattern::R50k, Pattern::Cl100k, Pattern::O200k];

#[test]
fn known_splits() {
    assert_eq!(
        ours(Pattern::R50k, "Hello world, it's 2024!"),
        ["Hello", " world", ",", " it", "'s", " 2024", "!"]
    );
    assert_eq!(
        ours(Pattern::Cl100k, "x = foo.bar(12345)\n\n  y"),
        [
            "x", " =", " foo", ".bar", "(", "123", "45", ")\n\n", " ", " y"
        ]
    );
}

#[test]
fn edge_cases_match_the_regex() {
    let cases = [
        "",
        " ",
        "   ",
        "a",
        "\n",
        "\r\n",
        "a  b",
        "a \n b",
        "a\n\n\n",
        "a  \n\t x",
        "  \n  x",
        "x   ",
        "x \u{a0}\u{2028}y",
        "it's I'M we'Re they'LL she'd O'Neil ''s 'sup",
        "DON'T ſ 'ſ 'Ve 'RE",
        "camelCaseWORDSHere HTTPServer iPhone ABCdef",
        "ǅemal ʰello ǈj",
        "café naïve e\u{301}cole \u{301}start x\u{301}\u{302}",
        "中文字符和English混合",
        "日本語のテキスト、句読点。",
        "😀 emoji 👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
        "numbers 1234567 ²³ Ⅻ ١٢٣٤ 3.14",
        "path/to/file.rs //comment /// doc\r\n",
        "fn main() {\n    println!(\"hi\");\n}\n",
        "def f(x):\n\treturn x**2  # square\n\n\n",
        "<|endoftext|> special <|fim_prefix|>",
        "עברית العربية ελληνικά русский",
        "tabs\t\tand\u{b}vertical\u{c}feed",
        "\u{85}next line\u{85}",
        " ' ''' '''s",
        "a'",
        "'",
        "x'S y'll z'LL",
        "...\n\n\r\n  \r\n",
        "  leading and trailing  ",
    ];
    for pattern in ALL {
        for text in cases {
            assert_eq!(
                ours(pattern, text),
                oracle(pattern, text),
                "{pattern:?} on {text:?}"
            );
        }
    }
}

/// Random strings over an alphabet that covers every class boundary the patterns draw:
/// letters by case (Lu, Ll, Lt, Lm, Lo), marks, numbers (Nd, No, Nl), the white-space
/// characters incl. \r \n and non-ASCII ones, apostrophes and contraction letters
/// (incl. the long s), '/', punctuation, symbols, emoji and multi-byte characters of
/// every UTF-8 length.
#[test]
fn random_texts_match_the_regex() {
    let alphabet: Vec<char> = concat!(
        "aAzZsStTdDmMlLvVeErRſ'''",
        "0123456789²Ⅻ١",
        "      \t\n\n\r\u{a0}\u{2028}\u{85}\u{b}",
        "ǅʰ中の한\u{301}\u{302}é",
        "/.,;:!?-_()[]{}\"#$%&*+<=>@\\^`|~",
        "😀👍🏽\u{200d}🇫€£→∑"
    )
    .chars()
    .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let regexes: Vec<(Pattern, fancy_regex::Regex)> = ALL
        .iter()
        .map(|&p| (p, fancy_regex::Regex::new(p.regex()).unwrap()))
        .collect();
    for round in 0..6000 {
        let len = (next() % 24) as usize;
        let text: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        for (pattern, re) in &regexes {
            let want: Vec<&str> = re.find_iter(&text).map(|m| m.unwrap().as_str()).collect();
            let mut got = Vec::new();
            pattern.split(&text, |p| got.push(p));
            assert_eq!(got, want, "round {round}, {pattern:?} on {text:?}");
        }
    }
}
