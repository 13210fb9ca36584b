//! `tokenize`'s input readers: JSONL (plain, gzip, zstd), Parquet and text files cut
//! into records, the text field taken from each JSON line, and the text tokenized
//! (GPT-2 ordinary; o200k with special tokens allowed). The first byte picks the file
//! name and the tokenizer.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shardsmith_tokens::input::{self, Reader, RecordKind};
use shardsmith_tokens::tokenizer::Scratch;
use shardsmith_tokens::{InputRoot, OpenAi, Position, Tokenizer, TokenizerSpec};

const NAMES: [&str; 6] = [
    "in.jsonl",
    "in.jsonl.gz",
    "in.jsonl.zst",
    "in.parquet",
    "in.txt",
    "in.ndjson",
];

fn tokenizer(which: usize) -> &'static Tokenizer {
    static TOKENIZERS: OnceLock<[Tokenizer; 2]> = OnceLock::new();
    &TOKENIZERS.get_or_init(|| {
        let load = |enc, special| {
            Tokenizer::load(&TokenizerSpec::OpenAi(enc), special).expect("built-in encodings load")
        };
        [load(OpenAi::R50k, false), load(OpenAi::O200k, true)]
    })[which]
}

fuzz_target!(
    init: {
        // Loading the encodings takes most of a second: not the first input's time.
        tokenizer(0);
    },
    |data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let root = shardsmith_fuzz::scratch();
    let rel = NAMES[usize::from(pick) % NAMES.len()];
    shardsmith_fuzz::write(&root, rel, file);
    let Ok(input) = InputRoot::local(&root.join(rel)) else {
        return;
    };
    let Ok(files) = input::list(&[input]) else {
        return;
    };
    let tokenizer = tokenizer(usize::from(pick >> 7));
    let mut scratch = Scratch::default();
    let mut reader = Reader::new(&files, "text", Position::default());
    let mut ids = Vec::new();
    while let Ok(Some(batch)) = reader.next_batch() {
        for record in &batch.records {
            let bytes = &batch.data[record.range.clone()];
            let text = match &record.kind {
                RecordKind::Json => shardsmith_tokens::json_text(bytes, "text").ok(),
                RecordKind::Text => std::str::from_utf8(bytes).ok().map(Into::into),
                RecordKind::Bad(_) => None,
            };
            if let Some(text) = text {
                ids.clear();
                let _ = tokenizer.encode(&text, &mut scratch, &mut ids);
            }
        }
    }
    let _ = reader.position();
});
