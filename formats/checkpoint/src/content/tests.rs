use super::holes::*;
use super::scan::*;
use super::wrong::*;
use super::zeros::*;
use std::fs::File;

use crate::values::TensorDtype;

fn runs(data: &[u8], piece: usize) -> ZeroRuns {
    let mut z = ZeroRuns::new(100);
    for chunk in data.chunks(piece) {
        z.update(chunk);
    }
    z.finish();
    z
}

#[test]
fn zero_runs_are_found_at_any_alignment_and_piece_size() {
    let mut data = vec![1u8; 20_000];
    data[1000..5200].fill(0);
    data[9000..9500].fill(0);
    data[12_000..20_000].fill(0);
    for piece in [1, 333, 4096, 7000, 20_000] {
        let z = runs(&data, piece);
        assert_eq!(
            z.runs,
            vec![(1100, 5300), (12_100, 20_100)],
            "piece {piece}"
        );
        assert_eq!(z.count, 2);
        assert!(!z.all_zero());
    }
    assert!(runs(&[0u8; 9000], 4096).all_zero());
    assert_eq!(runs(&[0u8; 4095], 4096).count, 0);
}

/// `rows` × `cols` F32 values, none zero, little-endian.
fn dense(rows: usize, cols: usize) -> Vec<u8> {
    (0..rows * cols)
        .flat_map(|i| {
            let v = (i % 977 + 1) as f32 * if i % 3 == 0 { -0.001 } else { 0.002 };
            v.to_le_bytes()
        })
        .collect()
}

/// The judgement of `data`, a tensor of `dtype` and `shape` at file offset `start`,
/// fed in pieces of every size tried (which must agree).
fn judge(
    data: &[u8],
    start: u64,
    dtype: TensorDtype,
    shape: &[u64],
    contiguous: bool,
) -> Option<ZeroJudgement> {
    let mut out = None;
    for piece in [1, 7, 4096, 1 << 20] {
        let mut scan = TensorScan::new(start, Some(dtype), false).with_shape(shape, contiguous);
        for chunk in data.chunks(piece) {
            scan.update(chunk);
        }
        scan.finish();
        let j = scan.zero_judgement();
        if piece > 1 {
            assert_eq!(j, out, "piece {piece}");
        }
        out = j;
    }
    out
}

#[test]
fn zero_elements_count_both_zeros_across_pieces() {
    let mut data = dense(1, 100);
    data[8..12].copy_from_slice(&0f32.to_le_bytes());
    data[20..24].copy_from_slice(&(-0f32).to_le_bytes());
    for piece in [1, 3, 5, 400] {
        let mut z = ZeroElements::new(Some(TensorDtype::F32));
        data.chunks(piece).for_each(|c| z.update(c));
        assert_eq!(z.count, 2, "piece {piece}");
    }
    let mut z = ZeroElements::new(Some(TensorDtype::Bf16));
    z.update(&[0, 0x80, 0, 0, 0, 0x3f, 0x80, 0]);
    assert_eq!(z.count, 2, "-0, +0; 0x3f00 and 0x0080 are not zero");
    let mut z = ZeroElements::new(Some(TensorDtype::I32));
    z.update(&[0; 64]);
    assert_eq!(z.count, 0, "integers are not counted");
}

#[test]
fn mid_row_run_in_a_dense_tensor_is_an_error() {
    // The shape of the real case: F32 [384, 384] (rows of 1,536 bytes), no zero
    // element, 4,096 zeros starting 1,512 bytes into row 345.
    let start = 11_416 + 49_457_152;
    let mut data = dense(384, 384);
    let at = 50_000_000 - start;
    data[at..at + 4096].fill(0);
    let j = judge(&data, start as u64, TensorDtype::F32, &[384, 384], true).unwrap();
    assert!(j.error, "{j:?}");
    assert_eq!((j.start, j.end), (50_000_000, 50_004_096));
    assert_eq!(
        j.why,
        "start mid-row (row 345, byte 1512 of 1536) and end mid-row (row 348, byte 1000 of 1536) and the tensor has no other zero element: data lost by the storage"
    );
    // Unknown strides (a torch storage): [384, 384] has one row length, same verdict.
    assert!(
        judge(&data, start as u64, TensorDtype::F32, &[384, 384], false)
            .unwrap()
            .error
    );
}

#[test]
fn whole_zero_rows_of_an_embedding_are_not_an_error() {
    // Rows of 4 KiB; row 3 zero (a padding row), and rows 6..9.
    let mut data = dense(16, 1024);
    data[3 * 4096..4 * 4096].fill(0);
    data[6 * 4096..9 * 4096].fill(0);
    let j = judge(&data, 100, TensorDtype::F32, &[16, 1024], true).unwrap();
    assert!(!j.error, "{j:?}");
    assert_eq!((j.start, j.end), (100 + 3 * 4096, 100 + 4 * 4096));
    assert!(
        j.why.starts_with("covering whole rows 3..4 of 4096 bytes"),
        "{}",
        j.why
    );
    // The low byte of the next row's first value happens to be zero (one float in
    // 256): the byte run ends 1 byte into row 4, the elements it covers do not.
    let mut low = data.clone();
    low[4 * 4096] = 0;
    let j = judge(&low, 100, TensorDtype::F32, &[16, 1024], true).unwrap();
    assert!(
        !j.error && j.why.starts_with("covering whole rows 3..4"),
        "{j:?}"
    );
    assert_eq!((j.start, j.end), (100 + 3 * 4096, 100 + 4 * 4096 + 1));
    // The same with a chance zero element next to the row, in a tensor that has
    // zero elements elsewhere: the run starts mid-row, a warning.
    data[3 * 4096 - 4..3 * 4096].fill(0);
    data[40..44].fill(0);
    let j = judge(&data, 100, TensorDtype::F32, &[16, 1024], true).unwrap();
    assert!(!j.error && j.why.contains("1 other zero element"), "{j:?}");
}

#[test]
fn all_zero_integer_and_mask_tensors_have_no_finding() {
    let zeros = vec![0u8; 64 * 1024];
    assert_eq!(judge(&zeros, 0, TensorDtype::F32, &[16, 1024], true), None);
    let mut ints = vec![1u8; 64 * 1024];
    ints[1000..9000].fill(0);
    for dtype in [
        TensorDtype::I32,
        TensorDtype::U8,
        TensorDtype::Bool,
        TensorDtype::F8E8M0,
    ] {
        assert_eq!(judge(&ints, 0, dtype, &[16, 1024], true), None, "{dtype:?}");
    }
}

#[test]
fn a_tensor_with_other_zero_elements_stays_a_warning() {
    // ReLU-sparse or pruned weights: zero elements elsewhere.
    let mut data = dense(64, 384);
    data[5000..9096].fill(0);
    data[20_000..20_004].fill(0);
    let j = judge(&data, 0, TensorDtype::F32, &[64, 384], true).unwrap();
    assert!(!j.error, "{j:?}");
    assert_eq!(
        j.why,
        "start mid-row (row 3, byte 392 of 1536) and end mid-row (row 5, byte 1416 of 1536), but the tensor has 1 other zero element(s), as sparse or pruned weights do: data lost by the storage, or legitimately zero"
    );
    // The same run cut to 4 KiB blocks of the file is an error all the same.
    let mut data = dense(64, 384);
    data[8192..12_288].fill(0);
    data[20_000..20_004].fill(0);
    let j = judge(&data, 0, TensorDtype::F32, &[64, 384], true).unwrap();
    assert!(j.error && j.why.contains("whole 4 KiB blocks"), "{j:?}");
    // ... of the file, not of the tensor.
    let mut scan = TensorScan::new(0, Some(TensorDtype::F32), false)
        .with_shape(&[64, 384], true)
        .at_file_offset(100);
    scan.update(&data);
    scan.finish();
    assert!(!scan.zero_judgement().unwrap().error);
}

#[test]
fn structured_zeros_stay_warnings() {
    // A column range zero in every row (zero-initialised input features).
    let mut data = dense(4, 2048);
    for row in 0..4 {
        data[row * 8192 + 1024..row * 8192 + 6144].fill(0);
    }
    let j = judge(&data, 0, TensorDtype::F32, &[4, 2048], true).unwrap();
    assert!(!j.error && j.why.contains("column pattern"), "{j:?}");
    // An identity: mostly zeros.
    let mut eye = vec![0u8; 4 * 2048 * 4];
    for i in 0..4 {
        eye[(i * 2048 + i) * 4..][..4].copy_from_slice(&1f32.to_le_bytes());
    }
    let j = judge(&eye, 0, TensorDtype::F32, &[4, 2048], true).unwrap();
    assert!(!j.error && j.why.contains("mostly zero"), "{j:?}");
    // A vector (one row): a zero segment, such as the k part of a fused qkv bias.
    let mut bias = dense(1, 3840);
    bias[5120..10_240].fill(0);
    for shape in [&[3840][..], &[1, 3840], &[3840, 1]] {
        let j = judge(&bias, 0, TensorDtype::F32, shape, true).unwrap();
        assert!(!j.error, "{shape:?}: {j:?}");
    }
    // A storage of unknown strides: a zero row of the transposed layout is whole rows
    // for one of the lengths the shape allows.
    let mut t = dense(2048, 8);
    t[4096..12_288].fill(0);
    assert!(
        !judge(&t, 0, TensorDtype::F32, &[8, 2048], false)
            .unwrap()
            .error
    );
    assert!(
        judge(&t, 0, TensorDtype::F32, &[8, 2048], true)
            .unwrap()
            .error
    );
    // Without a shape: today's warning.
    let mut scan = TensorScan::new(0, Some(TensorDtype::F32), false);
    scan.update(&t);
    scan.finish();
    let j = scan.zero_judgement().unwrap();
    assert!(
        !j.error && j.why.contains("or a legitimately zero row"),
        "{j:?}"
    );
}

#[test]
fn wrong_content_is_named() {
    let lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1234\n";
    let msg = wrong_content(lfs, lfs.len() as u64).unwrap();
    assert!(msg.contains("Git LFS pointer of a 1234-byte file"), "{msg}");
    assert!(
        wrong_content(b"\n<!DOCTYPE html><html>", 30)
            .unwrap()
            .contains("HTML")
    );
    assert!(wrong_content(b"", 0).unwrap().contains("empty"));
    assert!(wrong_content(b"PK\x03\x04", 4).is_none());
}

#[test]
fn holes_of_a_sparse_file_are_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    let f = File::create(&path).unwrap();
    f.set_len(1 << 20).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&[1u8; 4096], 0).unwrap();
    f.sync_all().unwrap();
    let h = holes(&path);
    // Filesystems without hole support report none; where supported, the hole
    // starts after the written block.
    if let Some(&(start, end)) = h.first() {
        assert!((4096..=65_536).contains(&start), "{h:?}");
        assert_eq!(end, 1 << 20);
        assert!(in_hole(&h, 500_000, 600_000));
    }
}
