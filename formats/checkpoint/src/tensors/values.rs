//! Element-wise comparison of two canonical forms (`diff --values`): how many elements
//! differ, and the largest absolute and relative difference, streamed block by block.

use crate::values::TensorDtype;

/// How the values of two tensors of the same shape differ.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueDiff {
    /// Elements compared.
    pub elements: u64,
    /// True when elements were compared as numbers (else as bit patterns: fp8 and
    /// packed types, whose maxima stay 0).
    pub by_value: bool,
    /// Elements that differ: in their bits for one dtype on both sides (integers
    /// exactly), by value across a conversion (NaN equal to NaN, +0 to −0).
    pub differing: u64,
    /// Row-major index of the first differing element.
    pub first: Option<u64>,
    /// Largest |a − b| over elements where both are finite.
    pub max_abs: f64,
    /// Largest |a − b| / max(|a|, |b|) over elements where both are finite, not both 0.
    pub max_rel: f64,
    /// Differing elements where one side is NaN or infinite (left out of the maxima).
    pub non_finite: u64,
    /// Differing elements whose values are equal as numbers: other NaN payloads, +0
    /// against −0 (counted in `differing`, left out of the maxima).
    pub bit_only: u64,
}

/// Reads one little-endian element of `dtype` as a number, when the dtype is numeric
/// and not packed (no fp8, no sub-byte types).
pub fn reader(dtype: TensorDtype) -> Option<fn(&[u8]) -> f64> {
    use TensorDtype::*;
    Some(match dtype {
        F64 => |b| f64::from_le_bytes(b.try_into().expect("8")),
        F32 => |b| f64::from(f32::from_le_bytes(b.try_into().expect("4"))),
        F16 => |b| f16_to_f64(u16::from_le_bytes(b.try_into().expect("2"))),
        Bf16 => |b| {
            f64::from(f32::from_bits(
                u32::from(u16::from_le_bytes(b.try_into().expect("2"))) << 16,
            ))
        },
        I64 => |b| i64::from_le_bytes(b.try_into().expect("8")) as f64,
        U64 => |b| u64::from_le_bytes(b.try_into().expect("8")) as f64,
        I32 => |b| f64::from(i32::from_le_bytes(b.try_into().expect("4"))),
        U32 => |b| f64::from(u32::from_le_bytes(b.try_into().expect("4"))),
        I16 => |b| f64::from(i16::from_le_bytes(b.try_into().expect("2"))),
        U16 => |b| f64::from(u16::from_le_bytes(b.try_into().expect("2"))),
        I8 => |b| f64::from(b[0] as i8),
        U8 | Bool => |b| f64::from(b[0]),
        _ => return None,
    })
}

/// IEEE half precision to f64, exactly.
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Accumulates the comparison of two element streams, block by block.
pub struct Compare {
    read_a: Option<fn(&[u8]) -> f64>,
    read_b: Option<fn(&[u8]) -> f64>,
    size_a: usize,
    size_b: usize,
    /// The same dtype on both sides: elements differ when their bits do (integers
    /// exactly, whatever f64 can hold); a conversion is compared by value.
    same_dtype: bool,
    /// What was found so far.
    pub diff: ValueDiff,
}

impl Compare {
    /// A comparison of elements of `a` with elements of `b` (the same dtype, or two
    /// numeric ones: a conversion is compared by value).
    pub fn new(a: TensorDtype, b: TensorDtype) -> Self {
        let numeric = reader(a).zip(reader(b));
        Self {
            read_a: numeric.map(|n| n.0),
            read_b: numeric.map(|n| n.1),
            size_a: a.size() as usize,
            size_b: b.size() as usize,
            same_dtype: a == b,
            diff: ValueDiff {
                by_value: numeric.is_some(),
                ..ValueDiff::default()
            },
        }
    }

    /// Compares the next `n` elements: `a` and `b` hold exactly `n` each.
    pub fn update(&mut self, a: &[u8], b: &[u8]) {
        let n = a.len() / self.size_a;
        for i in 0..n {
            let ea = &a[i * self.size_a..(i + 1) * self.size_a];
            let eb = &b[i * self.size_b..(i + 1) * self.size_b];
            let index = self.diff.elements + i as u64;
            if self.same_dtype && ea == eb {
                continue;
            }
            let differs = match (self.read_a, self.read_b) {
                (Some(ra), Some(rb)) => {
                    let (x, y) = (ra(ea), rb(eb));
                    let same = x == y || (x.is_nan() && y.is_nan());
                    if same && self.same_dtype {
                        // Other bits, the same number: a NaN payload or a signed zero.
                        self.diff.bit_only += 1;
                    } else if !same {
                        if x.is_finite() && y.is_finite() {
                            let abs = (x - y).abs();
                            let rel = abs / x.abs().max(y.abs());
                            self.diff.max_abs = self.diff.max_abs.max(abs);
                            self.diff.max_rel = self.diff.max_rel.max(rel);
                        } else {
                            self.diff.non_finite += 1;
                        }
                    }
                    !same || self.same_dtype
                }
                _ => ea != eb,
            };
            if differs {
                self.diff.differing += 1;
                self.diff.first.get_or_insert(index);
            }
        }
        self.diff.elements += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_read_exactly() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert!(f16_to_f64(0x7e00).is_nan());
        assert_eq!(f16_to_f64(0xfc00), f64::NEG_INFINITY);
    }

    #[test]
    fn counts_and_maxima() {
        let a: Vec<u8> = [1.0f32, 2.0, 4.0, f32::NAN, 0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [1.0f32, 2.5, 3.0, f32::NAN, -0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut c = Compare::new(TensorDtype::F32, TensorDtype::F32);
        c.update(&a[..8], &b[..8]);
        c.update(&a[8..], &b[8..]);
        assert_eq!(c.diff.elements, 5);
        // 2.5 against 2, 3 against 4, and +0 against −0 (in its bits only).
        assert_eq!(c.diff.differing, 3);
        assert_eq!(c.diff.bit_only, 1);
        assert_eq!(c.diff.first, Some(1));
        assert_eq!(c.diff.max_abs, 1.0);
        assert_eq!(c.diff.max_rel, 0.25);
    }

    #[test]
    fn a_conversion_is_compared_by_value() {
        // bf16 1.0 (0x3f80) against f16 1.0 (0x3c00): the same number.
        let mut c = Compare::new(TensorDtype::Bf16, TensorDtype::F16);
        c.update(&0x3f80u16.to_le_bytes(), &0x3c00u16.to_le_bytes());
        assert_eq!(c.diff.differing, 0);
    }

    #[test]
    fn integers_differ_exactly_and_bit_only_changes_are_named() {
        let a: Vec<u8> = [1i64 << 53, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [(1i64 << 53) + 1, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut c = Compare::new(TensorDtype::I64, TensorDtype::I64);
        c.update(&a, &b);
        assert_eq!((c.diff.differing, c.diff.first), (1, Some(0)));
        let a: Vec<u8> = [0.0f32, f32::NAN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [-0.0f32, f32::from_bits(0x7fc0_0001)]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut c = Compare::new(TensorDtype::F32, TensorDtype::F32);
        c.update(&a, &b);
        assert_eq!(
            (c.diff.differing, c.diff.bit_only, c.diff.max_abs),
            (2, 2, 0.0)
        );
    }
}
