use super::{MAX_DEPTH, to_json};
use crate::mds::input::problem::Problem;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn json(stored: &[u8]) -> String {
    String::from_utf8(to_json(stored).unwrap()).unwrap()
}

fn refused(stored: &[u8]) -> String {
    match to_json(stored) {
        Err(Problem::Corrupt(why)) => why,
        other => panic!("{stored:?} gave {other:?}"),
    }
}

#[test]
fn litdatas_encodings_become_json_text() {
    // `_nested_dumps(value).hex()` from litdata 0.2.76, and the text Parquet input gives
    // the same value.
    for (python, text) in [
        ("010200000001000000610100000062", r#"["a","b"]"#),
        ("0100000000", "[]"),
        ("02020000000100000000000000feffffffffffffff", "[1,-2]"),
        (
            "0303000000000000000000e03f9c7500883ce4377e000000000000f87f",
            r#"[0.5,1e300,"NaN"]"#,
        ),
        ("04020000000100", "[true,false]"),
        (
            "050200000001000000770803000000000000000100000068020200000003000000000000000400000000000000",
            r#"{"w":3,"h":[3,4]}"#,
        ),
        (
            "06020000000200000001000000610100000062120100000000000000110100000078101102000000c3a9",
            r#"[{"a":1,"b":"x"},{"a":null,"b":"é"}]"#,
        ),
        ("000c0000005b312c2278222c6e756c6c5d", r#"[1,"x",null]"#),
        (
            "0501000000010000006b0501000000010000007a09000000000000f03f",
            r#"{"k":{"z":1.0}}"#,
        ),
        ("000b0000005b5b312c325d2c5b335d5d", "[[1,2],[3]]"),
        ("0500000000", "{}"),
    ] {
        assert_eq!(json(&hex(python)), text, "{python}");
    }
    // Plain JSON (older litdata, an Arrow footer's text) is written again compactly,
    // keys in their order.
    assert_eq!(
        json(br#"{"z": [1, 2.50], "a": "\u00e9"}"#),
        r#"{"z":[1,2.5],"a":"é"}"#
    );
    assert_eq!(json(b" [1]"), "[1]");
    // Python's `json.dumps` text: floats read exactly, NaN and infinities, big integers.
    assert_eq!(
        json(b"[4.5000000000000005e+300, 1.9000000000000001, NaN, -Infinity, -0]"),
        r#"[4.5000000000000005e300,1.9000000000000001,"NaN","-Infinity",0]"#
    );
    assert_eq!(
        json(b"[123456789012345678901234567890]"),
        "[123456789012345678901234567890]"
    );
    assert_eq!(json(&hex("0b")), "null");
}

#[test]
fn damaged_encodings_are_refused_without_panics() {
    assert!(refused(b"").contains("empty"));
    // A count far beyond the bytes: refused before anything is sized by it.
    for stated in [
        "01ffffffff",
        "02ffffffff",
        "03ffffffff",
        "04ffffffff",
        "05ffffffff",
    ] {
        assert!(refused(&hex(stated)).contains("ends inside"), "{stated}");
    }
    assert!(refused(&hex("06ffffffff00000000")).contains("without keys"));
    assert!(refused(&hex("0601000000010000000100000061")).contains("ends inside"));
    assert!(refused(&hex("060100000001000000010000006199")).contains("record tag 153"));
    // A dict whose value has an unknown tag; a string that is not UTF-8.
    assert!(refused(&hex("050100000001000000610c")).contains("unknown tag 12"));
    assert!(refused(&hex("0701000000ff")).contains("UTF-8"));
    // Bytes after the value; JSON that does not read.
    assert!(refused(&hex("0b00")).contains("1 bytes after"));
    assert!(refused(&hex("00030000005b312c")).contains("JSON"));
    assert!(refused(b"[1, nan]").contains("JSON"));
    assert!(refused(b"[01]").contains("JSON"));
    assert!(refused(b"{\"a\" 1}").contains("`:`"));
    assert!(refused(b"[1] 2").contains("more after"));
    // Nesting past the limit.
    let mut deep = Vec::new();
    for _ in 0..=MAX_DEPTH {
        deep.extend_from_slice(&hex("050100000001000000"));
        deep.push(b'k');
    }
    deep.push(11);
    assert!(refused(&deep).contains("deeper"));
    let text = |n: usize| [vec![b'['; n], vec![b']'; n]].concat();
    assert_eq!(json(&text(MAX_DEPTH + 1)).len(), 2 * (MAX_DEPTH + 1));
    assert!(refused(&text(MAX_DEPTH + 2)).contains("deeper"));
    // Every cut of a valid encoding is refused, never a panic.
    let whole =
        hex("06020000000200000001000000610100000062120100000000000000110100000078101102000000c3a9");
    for end in 0..whole.len() {
        assert!(to_json(&whole[..end]).is_err(), "{end}");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    // Every single-byte change of valid encodings, and short random strings of the tag
    // bytes: an answer each time, never a panic.
    let valid = [
        hex(
            "050200000001000000770803000000000000000100000068020200000003000000000000000400000000000000",
        ),
        hex("06020000000200000001000000610100000062120100000000000000110100000078101102000000c3a9"),
        hex("000c0000005b312c2278222c6e756c6c5d"),
        br#"{"a": [1, -2.5e-3, "\u00e9\"", true, null, NaN]}"#.to_vec(),
    ];
    for stored in &valid {
        assert!(to_json(stored).is_ok());
        for at in 0..stored.len() {
            for byte in [0u8, 1, 2, 5, 6, 0x11, 0x22, 0x5b, 0x7b, 0x80, 0xff] {
                let mut changed = stored.clone();
                changed[at] = byte;
                let _ = to_json(&changed);
            }
        }
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        let mut stored = Vec::new();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        for i in 0..(seed % 24) {
            let pick = (seed >> (i % 8 * 8)) as u8;
            stored.push(if pick & 0x80 != 0 { pick & 0x0f } else { pick });
        }
        let _ = to_json(&stored);
    }
}
