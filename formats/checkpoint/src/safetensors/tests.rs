use shardsmith_manifest::{FindingKind, Inspection, Inspector};

use super::*;
use crate::report::Settings;

fn file(header: &str, data_len: usize) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend((0..data_len).map(|i| (i % 251 + 1) as u8));
    out
}

fn inspect(bytes: &[u8]) -> Inspection {
    let settings = Settings {
        size: bytes.len() as u64,
        ..Settings::default()
    };
    let mut whole = Box::new(SafetensorsInspector::new("m.safetensors", settings.clone()));
    whole.update(bytes);
    let whole = whole.finish();
    let mut pieces = Box::new(SafetensorsInspector::new("m.safetensors", settings));
    for c in bytes.chunks(5) {
        pieces.update(c);
    }
    assert_eq!(pieces.finish(), whole);
    whole
}

fn kinds(i: &Inspection) -> Vec<FindingKind> {
    i.findings.iter().map(|f| f.kind).collect()
}

const GOOD: &str = r#"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}}"#;

#[test]
fn good_file_has_no_findings_and_lists_tensors() {
    let i = inspect(&file(GOOD, 22));
    assert!(i.findings.is_empty(), "{:?}", i.findings);
    assert_eq!(i.facts["tensors"], serde_json::json!(["a", "b"]));
}

#[test]
fn each_header_problem_is_named() {
    let cases: Vec<(String, usize, FindingKind, &str)> = vec![
        (
            GOOD.into(),
            21,
            FindingKind::Truncated,
            "incomplete metadata",
        ),
        (GOOD.into(), 30, FindingKind::TrailingData, "8 bytes after"),
        (
            GOOD.replace("[16,22]", "[18,24]"),
            24,
            FindingKind::BadTensor,
            "gap of 2",
        ),
        (
            GOOD.replace("[16,22]", "[14,20]"),
            20,
            FindingKind::BadTensor,
            "overlaps",
        ),
        (
            GOOD.replace("[3]", "[4]"),
            22,
            FindingKind::BadTensor,
            "needs 8 bytes",
        ),
        (
            GOOD.replace("BF16", "F128"),
            22,
            FindingKind::UnsupportedDtype,
            "F128",
        ),
        (
            GOOD.replace("\"pt\"", "1"),
            22,
            FindingKind::BadHeader,
            "__metadata__",
        ),
        (
            GOOD[..40].to_string(),
            0,
            FindingKind::BadHeader,
            "not valid JSON",
        ),
    ];
    for (header, len, kind, text) in cases {
        let i = inspect(&file(&header, len));
        assert!(
            i.findings
                .iter()
                .any(|f| f.kind == kind && f.message.contains(text)),
            "{header}: {:?}",
            i.findings
        );
    }
}

#[test]
fn hostile_header_lengths_are_findings() {
    let mut big = (1u64 << 40).to_le_bytes().to_vec();
    big.extend_from_slice(b"{}");
    assert_eq!(kinds(&inspect(&big)), [FindingKind::BadHeader]);
    let mut past = 1000u64.to_le_bytes().to_vec();
    past.extend_from_slice(b"{}");
    assert_eq!(kinds(&inspect(&past)), [FindingKind::BadHeader]);
    assert_eq!(kinds(&inspect(b"abc")), [FindingKind::Truncated]);
}
