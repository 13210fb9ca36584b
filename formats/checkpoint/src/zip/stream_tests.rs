//! Tests of the sequential pass ([`super::stream`]).

use super::stream::sole_shape;
use crate::torch::{self, Contents};
use crate::values::TensorDtype;

fn sole(
    shape: &[u64],
    stride: Option<&[u64]>,
    offset: u64,
    tensors: usize,
) -> Option<(Vec<u64>, bool)> {
    let dtype = Some(TensorDtype::F32);
    let names: Vec<String> = (0..tensors).map(|i| format!("t{i}")).collect();
    let storage = torch::Storage {
        key: "0".into(),
        dtype,
        bytes: Some(shape.iter().product::<u64>() * 4),
        tensors: names.clone(),
        location: "cpu".into(),
        untyped: false,
        numel: None,
    };
    let c = Contents {
        views: names
            .iter()
            .map(|name| torch::View {
                name: name.clone(),
                dtype,
                shape: shape.to_vec(),
                storage: "0".into(),
                offset: Some(offset),
                stride: stride.map(<[u64]>::to_vec),
                ..torch::View::default()
            })
            .collect(),
        ..Contents::default()
    };
    sole_shape(&c, &storage)
}

#[test]
fn a_storage_gets_the_shape_of_its_one_tensor_as_laid_out() {
    assert_eq!(
        sole(&[30, 8], Some(&[8, 1]), 0, 1),
        Some((vec![30, 8], true))
    );
    // Saved transposed: the storage's rows are the first dimension's.
    assert_eq!(
        sole(&[8, 30], Some(&[1, 8]), 0, 1),
        Some((vec![30, 8], true))
    );
    // Dimensions of 1 have any stride.
    assert_eq!(
        sole(&[1, 30, 8], Some(&[7, 8, 1]), 0, 1),
        Some((vec![30, 8], true))
    );
    // Strides unknown: every dimension may hold the rows.
    assert_eq!(sole(&[30, 8], None, 0, 1), Some((vec![30, 8], false)));
    // Shared by two tensors: no shape.
    assert_eq!(sole(&[30, 8], Some(&[8, 1]), 0, 2), None);
}
