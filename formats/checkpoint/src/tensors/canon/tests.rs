use std::io::Read;
use std::path::Path;

use super::super::model::{Piece, Tensor};
use crate::values::TensorDtype;

/// Writes `values` as little-endian f32 to `path`.
fn write_f32(path: &Path, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

fn piece(path: &Path, base: u64, len: u64, shape: &[u64], stride: &[u64], at: &[u64]) -> Piece {
    Piece {
        path: path.to_path_buf(),
        base,
        len,
        offset: 0,
        shape: shape.to_vec(),
        stride: stride.to_vec(),
        at: at.to_vec(),
        encoded: None,
    }
}

fn tensor(shape: &[u64], pieces: Vec<Piece>) -> Tensor {
    Tensor {
        name: "t".into(),
        dtype: TensorDtype::F32,
        shape: shape.to_vec(),
        pieces,
        file: "f".into(),
    }
}

fn canonical_f32(t: &Tensor) -> Vec<f32> {
    let mut bytes = Vec::new();
    t.canonical().unwrap().read_to_end(&mut bytes).unwrap();
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn a_transposed_view_reads_as_its_contiguous_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    // Storage: a 3×4 row-major matrix m[i][j] = 10 i + j, behind 8 bytes of header.
    let mut values = vec![-1.0, -1.0];
    values.extend((0..3).flat_map(|i| (0..4).map(move |j| (10 * i + j) as f32)));
    write_f32(&path, &values);
    // Its transpose: shape [4, 3], strides [1, 4].
    let t = tensor(
        &[4, 3],
        vec![piece(&path, 8, 48, &[4, 3], &[1, 4], &[0, 0])],
    );
    let expect: Vec<f32> = (0..4)
        .flat_map(|j| (0..3).map(move |i| (10 * i + j) as f32))
        .collect();
    assert_eq!(canonical_f32(&t), expect);
}

#[test]
fn chunks_split_along_the_last_dimension_interleave_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    let (left, right) = (dir.path().join("l"), dir.path().join("r"));
    // Global 4×6, g[i][j] = 10 i + j; chunk 0 holds columns 0..3, chunk 1 columns 3..6.
    let chunk = |cols: std::ops::Range<u32>| -> Vec<f32> {
        (0..4)
            .flat_map(|i| cols.clone().map(move |j| (10 * i + j) as f32))
            .collect()
    };
    write_f32(&left, &chunk(0..3));
    write_f32(&right, &chunk(3..6));
    let t = tensor(
        &[4, 6],
        vec![
            piece(&right, 0, 48, &[4, 3], &[3, 1], &[0, 3]),
            piece(&left, 0, 48, &[4, 3], &[3, 1], &[0, 0]),
        ],
    );
    let expect: Vec<f32> = (0..4)
        .flat_map(|i| (0..6).map(move |j| (10 * i + j) as f32))
        .collect();
    assert_eq!(canonical_f32(&t), expect);
}

#[test]
fn a_long_tensor_streams_in_blocks_and_a_scalar_is_one_element() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let values: Vec<f32> = (0..300_000).map(|v| v as f32).collect();
    write_f32(&path, &values);
    let t = tensor(
        &[600, 500],
        vec![piece(&path, 0, 1_200_000, &[600, 500], &[500, 1], &[0, 0])],
    );
    assert_eq!(canonical_f32(&t), values);
    let scalar = tensor(&[], vec![piece(&path, 8, 4, &[], &[], &[])]);
    assert_eq!(canonical_f32(&scalar), vec![2.0]);
}

#[test]
fn uncovered_elements_and_views_past_their_storage_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    write_f32(&path, &[0.0; 12]);
    let gap = tensor(
        &[4, 3],
        vec![piece(&path, 0, 24, &[2, 3], &[3, 1], &[0, 0])],
    );
    let mut bytes = Vec::new();
    let err = gap
        .canonical()
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap_err();
    assert!(err.to_string().contains("is in no chunk"), "{err}");
    let past = tensor(
        &[4, 3],
        vec![piece(&path, 0, 44, &[4, 3], &[3, 1], &[0, 0])],
    );
    let err = past.canonical().err().unwrap();
    assert!(
        err.to_string().contains("needs more than the 44 bytes"),
        "{err}"
    );
    let outside = tensor(
        &[4, 3],
        vec![piece(&path, 40, 16, &[4, 1], &[1, 1], &[0, 0])],
    );
    let err = outside.canonical().err().unwrap();
    assert!(
        err.to_string().contains("past the end of the 48-byte file"),
        "{err}"
    );
}

#[test]
fn a_large_strided_view_is_read_in_bands_with_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    // Storage: 40×24 row-major, m[i][j] = 100 i + j; views: its transpose, and a 3-d
    // permutation of a 5×8×24 reading of it.
    let values: Vec<f32> = (0..40)
        .flat_map(|i| (0..24).map(move |j| (100 * i + j) as f32))
        .collect();
    write_f32(&path, &values);
    let views = [
        tensor(
            &[24, 40],
            vec![piece(&path, 0, 3840, &[24, 40], &[1, 24], &[0, 0])],
        ),
        tensor(
            &[24, 5, 8],
            vec![piece(
                &path,
                0,
                3840,
                &[24, 5, 8],
                &[1, 192, 24],
                &[0, 0, 0],
            )],
        ),
    ];
    for t in &views {
        let mut gathered = Vec::new();
        t.canonical().unwrap().read_to_end(&mut gathered).unwrap();
        // A gather limit of 64 bytes: bands of one row of dimension 0.
        let mut banded = Vec::new();
        let mut reader = super::Canonical::with_gather_limit(t, 64).unwrap();
        assert!(reader.band.is_some());
        reader.read_to_end(&mut banded).unwrap();
        assert_eq!(banded, gathered);
        // Spot check against the definition: t[a][b] = storage[a + 24 b] (2-d).
        if t.shape.len() == 2 {
            let at = |a: usize, b: usize| {
                f32::from_le_bytes(banded[(a * 40 + b) * 4..][..4].try_into().unwrap())
            };
            assert_eq!(at(3, 7), values[3 + 24 * 7]);
        }
    }
}

#[test]
fn a_strided_piece_covering_part_of_its_tensor_is_an_error_not_a_short_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    write_f32(&path, &(0..960).map(|v| v as f32).collect::<Vec<_>>());
    // A [24, 40] transposed view declared as the first half of a [48, 40] tensor (a DCP
    // `.metadata` that lost the other chunk), with a gather limit that would band it.
    let t = tensor(
        &[48, 40],
        vec![piece(&path, 0, 3840, &[24, 40], &[1, 24], &[0, 0])],
    );
    let mut reader = super::Canonical::with_gather_limit(&t, 64).unwrap();
    assert!(reader.band.is_none());
    let mut out = Vec::new();
    let err = reader.read_to_end(&mut out).unwrap_err();
    assert!(err.to_string().contains("is in no chunk"), "{err}");
    let err = super::super::digest(&t).unwrap_err();
    assert!(err.to_string().contains("is in no chunk"), "{err}");
}
