//! `shardsmith verify` without a manifest on a safetensors file with zero bytes written
//! into it: a run that cannot be whole rows of a tensor with no other zero element is an
//! error (exit 1) naming why; whole zero rows stay a warning (exit 0).
//!
//! The fixture's tensor `w` is F32 [128, 64] (rows of 256 bytes) at bytes 632..33400
//! and has no zero element.

use crate::checkpoint::basic::{copy, finding, verify, zero};

/// `verify` of the fixture's model.safetensors with `len` zero bytes at `at`: exit code
/// and the zero_run finding's severity, range and message.
fn zeroed(at: usize, len: usize) -> (i32, String, u64, u64, String) {
    let t = copy("plain");
    let path = t.join("model.safetensors");
    zero(&path, at, len);
    let (code, report) = verify(&path, &[]);
    let f = finding(&report, "zero_run", "model.safetensors");
    let zero_runs = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "zero_run")
        .count();
    assert_eq!(zero_runs, 1, "{report:#}");
    (
        code,
        f["severity"].as_str().unwrap().to_string(),
        f["offset"].as_u64().unwrap(),
        f["end"].as_u64().unwrap(),
        f["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_mid_row_zero_run_in_a_tensor_without_zeros_is_an_error() {
    assert_eq!(
        zeroed(10_000, 4096),
        (
            1,
            "error".into(),
            10_000,
            14_096,
            "4096 zero bytes inside tensor `w` (F32 [128, 64]) start mid-row (row 36, byte 152 of 256) and end mid-row (row 52, byte 152 of 256) and the tensor has no other zero element: data lost by the storage".into()
        )
    );
}

#[test]
fn a_zeroed_file_block_mid_row_is_an_error() {
    let (code, severity, at, end, message) = zeroed(8192, 4096);
    assert_eq!(
        (code, severity.as_str(), at, end),
        (1, "error", 8192, 12_288)
    );
    assert!(
        message.contains("start mid-row (row 29, byte 136 of 256)"),
        "{message}"
    );
}

#[test]
fn whole_zero_rows_stay_a_warning() {
    // Rows 40..56 of `w`: 16 rows of 256 bytes, 4096 bytes.
    let (code, severity, at, end, message) = zeroed(632 + 40 * 256, 4096);
    assert_eq!(
        (code, severity.as_str(), at, end),
        (0, "warning", 10_872, 14_968)
    );
    assert!(
        message.contains("covering whole rows 40..56 of 256 bytes: a zero row is legitimate"),
        "{message}"
    );
}
