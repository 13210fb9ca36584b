//! The content checks `pack` runs on sample fields (JSON syntax, image start and end
//! markers, full JPEG/PNG decoding) and the MDS column encodings of raw field values.
//! The first byte picks the field name and the check or encoding.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_shard::columns::Encoding;
use shardsmith_shard::content::{self, Validation};

const EXTS: [&str; 7] = ["json", "jpg", "png", "webp", "gif", "seg.png", "jpeg"];
const ENCODINGS: [&str; 12] = [
    "int",
    "str_int",
    "str_float",
    "str_decimal",
    "json",
    "jpeg",
    "png",
    "uint16",
    "int64",
    "float16",
    "float64",
    "str",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, value)) = data.split_first() else {
        return;
    };
    let ext = EXTS[usize::from(pick) % EXTS.len()];
    let level = if pick & 0x80 != 0 {
        Validation::Full
    } else {
        Validation::Cheap
    };
    let _ = content::check(ext, value, level);
    if ext == "json" {
        let _ = content::check_json_stream(value);
    }
    let encoding = Encoding::parse(ENCODINGS[usize::from(pick >> 3) % ENCODINGS.len()])
        .expect("the listed encodings parse");
    if let Ok(stored) = encoding.encode(value)
        && let Some(size) = encoding.fixed_size()
    {
        assert_eq!(
            size,
            stored.len() as u64,
            "a fixed-size column stores its size"
        );
    }
});
