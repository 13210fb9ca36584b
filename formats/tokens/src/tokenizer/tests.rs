//! Our OpenAI encodings against `tiktoken-rs` (OpenAI's own core, with `fancy-regex`),
//! id for id. The Python reference is checked by the interop tests.

use super::*;

fn reference(enc: OpenAi) -> tiktoken_rs::CoreBPE {
    match enc {
        OpenAi::R50k => tiktoken_rs::r50k_base(),
        OpenAi::P50k => tiktoken_rs::p50k_base(),
        OpenAi::Cl100k => tiktoken_rs::cl100k_base(),
        OpenAi::O200k => tiktoken_rs::o200k_base(),
    }
    .unwrap()
}

fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "Hello world",
        "",
        " ",
        "\n\n\n",
        "It's DON'T we'Ll x'ſ",
        "naïve café e\u{301}cole — “quotes” ‘single’",
        "中文字符和English混合；日本語のテキスト。한국어 텍스트",
        "😀 emoji 👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
        "<|endoftext|> literal <|fim_prefix|> <|endofprompt|>",
        "def f(x):\n\treturn x**2  # square\n\n\n    pass\r\n",
        "numbers 1234567890 ²³ Ⅻ ١٢٣٤ 3.14159",
        "   trailing   ",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Long runs without spaces take the heap merge.
    texts.push("a".repeat(5000));
    texts.push("x7_".repeat(700));
    texts.push("ø🙂".repeat(300));
    // Real text: this crate's sources and the README.
    texts.push(include_str!("../../../../README.md").to_string());
    texts.push(include_str!("../pretok.rs").to_string());
    texts.push(include_str!("../bpe.rs").to_string());
    texts
}

#[test]
fn openai_encodings_match_tiktoken_rs() {
    for enc in [OpenAi::R50k, OpenAi::P50k, OpenAi::Cl100k, OpenAi::O200k] {
        let ours = Tokenizer::load(&TokenizerSpec::OpenAi(enc), false).unwrap();
        let theirs = reference(enc);
        let mut scratch = Scratch::default();
        for text in texts() {
            let mut got = Vec::new();
            ours.encode(&text, &mut scratch, &mut got).unwrap();
            // twice: the second run is served from the cache
            let mut again = Vec::new();
            ours.encode(&text, &mut scratch, &mut again).unwrap();
            let want = theirs.encode_ordinary(&text);
            assert_eq!(got, want, "{enc:?} on {:?}", &text[..text.len().min(80)]);
            assert_eq!(again, want);
        }
    }
}

#[test]
fn special_tokens_only_when_allowed() {
    let text = "a<|endoftext|>b <|endofprompt|>";
    let theirs = reference(OpenAi::Cl100k);
    let allowed = Tokenizer::load(&TokenizerSpec::OpenAi(OpenAi::Cl100k), true).unwrap();
    let mut got = Vec::new();
    allowed
        .encode(text, &mut Scratch::default(), &mut got)
        .unwrap();
    assert_eq!(got, theirs.encode_with_special_tokens(text));
    assert!(got.contains(&100257) && got.contains(&100276));
}

#[test]
fn golden_ids_and_vocabulary() {
    let gpt2 = Tokenizer::load(&TokenizerSpec::parse("gpt2"), false).unwrap();
    let mut got = Vec::new();
    gpt2.encode("Hello world", &mut Scratch::default(), &mut got)
        .unwrap();
    assert_eq!(got, [15496, 995]);
    assert_eq!(gpt2.name(), "r50k_base");
    assert_eq!(gpt2.vocab_size(), 50257);
    assert_eq!(gpt2.eod(None).unwrap(), ("<|endoftext|>".into(), 50256));
    assert!(gpt2.eod(Some("</s>")).is_err());
    let o200k = Tokenizer::load(&TokenizerSpec::parse("o200k_base"), false).unwrap();
    assert_eq!(o200k.vocab_size(), 200019);
    assert_eq!(o200k.eod(None).unwrap().1, 199999);
}

#[test]
fn a_file_that_is_no_tokenizer_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, b"{\"not\": \"a tokenizer\"}").unwrap();
    let err = Tokenizer::load(&TokenizerSpec::parse(path.to_str().unwrap()), false)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tokenizer.json"), "{err}");
    let missing = Tokenizer::load(&TokenizerSpec::parse("cl100k"), false)
        .err()
        .unwrap()
        .to_string();
    assert!(missing.contains("cl100k"), "{missing}");
}
