//! A column's stored bytes as the field bytes our writers take back for its encoding, so
//! MDS → any → MDS gives the same column bytes:
//!
//! - pass-through encodings (`bytes`, `str`, `json`, `jpeg`, `png`, `str_int`,
//!   `str_float`, `str_decimal`, `pkl`, `list[...]`, `jpeg_array`): the stored bytes;
//! - `int` and the numpy scalars: decimal text (floats in their shortest form that reads
//!   back to the same value, exponent form outside 1e-4..1e16 as Python's `repr`);
//! - `ndarray[:dtype[:shape]]`: a `.npy` file (version 1.0, C order);
//! - `pil`: a PNG of the pixels (lossless; modes `L`, `LA`, `RGB`, `RGBA`, `I;16`).

use std::borrow::Cow;
use std::fmt;

use super::problem::Problem;
use crate::columns::{ArrayDtype, Encoding};

/// How a column's stored bytes become field bytes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ColumnKind {
    /// The stored bytes; `name` is the MDS encoding, `suggested` what our writers call it.
    Pass { name: String, suggested: Encoding },
    /// `int`: i64.
    Int,
    /// A numpy scalar.
    Scalar(ArrayDtype),
    /// `ndarray[:dtype[:shape]]`.
    NdArray {
        dtype: Option<ArrayDtype>,
        shape: Option<Vec<u64>>,
    },
    /// `pil`: width, height, mode and raw pixels.
    Pil,
}

const DTYPES: [ArrayDtype; 11] = [
    ArrayDtype::U8,
    ArrayDtype::I8,
    ArrayDtype::U16,
    ArrayDtype::I16,
    ArrayDtype::F16,
    ArrayDtype::U32,
    ArrayDtype::I32,
    ArrayDtype::F32,
    ArrayDtype::U64,
    ArrayDtype::I64,
    ArrayDtype::F64,
];

impl ColumnKind {
    /// From an MDS encoding name (`int`, `ndarray:float32:3`, `pil`).
    pub(crate) fn parse(text: &str) -> Result<Self, crate::columns::EncodingError> {
        let pass = |suggested| ColumnKind::Pass {
            name: text.to_string(),
            suggested,
        };
        match text {
            "pil" => return Ok(ColumnKind::Pil),
            "pkl" | "list[pil]" | "list[jpeg]" | "list[png]" | "jpeg_array" | "jpegarray" => {
                return Ok(pass(Encoding::Bytes));
            }
            _ => {}
        }
        Ok(match Encoding::parse(text)? {
            Encoding::Int => ColumnKind::Int,
            Encoding::Scalar(d) => ColumnKind::Scalar(d),
            Encoding::NdArray { dtype, shape } => ColumnKind::NdArray { dtype, shape },
            other => pass(other),
        })
    }

    /// The encoding our writers take the field bytes with.
    pub(crate) fn suggested(&self) -> Encoding {
        match self {
            ColumnKind::Pass { suggested, .. } => suggested.clone(),
            ColumnKind::Int => Encoding::Int,
            ColumnKind::Scalar(d) => Encoding::Scalar(*d),
            ColumnKind::NdArray { dtype, shape } => Encoding::NdArray {
                dtype: *dtype,
                shape: shape.clone(),
            },
            ColumnKind::Pil => Encoding::Png,
        }
    }

    /// Stored size of every value, for fixed-size encodings.
    pub(crate) fn fixed_size(&self) -> Option<u64> {
        match self {
            ColumnKind::Pass { .. } | ColumnKind::Pil => None,
            other => other.suggested().fixed_size(),
        }
    }

    /// True when values are text that can be a sample key.
    pub(crate) fn is_text(&self) -> bool {
        match self {
            ColumnKind::Pass { name, .. } => matches!(
                name.as_str(),
                "str" | "bytes" | "json" | "str_int" | "str_float" | "str_decimal"
            ),
            ColumnKind::Int => true,
            ColumnKind::Scalar(d) => {
                !matches!(d, ArrayDtype::F16 | ArrayDtype::F32 | ArrayDtype::F64)
            }
            _ => false,
        }
    }

    /// The field bytes of a stored value.
    pub(crate) fn convert<'a>(&self, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, Problem> {
        let exact = |want: usize| -> Result<(), Problem> {
            if stored.len() == want {
                Ok(())
            } else {
                Err(Problem::Corrupt(format!(
                    "holds {} bytes, its encoding {self} stores {want}",
                    stored.len()
                )))
            }
        };
        Ok(match self {
            ColumnKind::Pass { .. } => Cow::Borrowed(stored),
            ColumnKind::Int => {
                exact(8)?;
                Cow::Owned(scalar_text(ArrayDtype::I64, stored).into_bytes())
            }
            ColumnKind::Scalar(d) => {
                exact(d.size())?;
                Cow::Owned(scalar_text(*d, stored).into_bytes())
            }
            ColumnKind::NdArray { dtype, shape } => {
                Cow::Owned(ndarray_npy(*dtype, shape.as_deref(), stored).map_err(Problem::corrupt)?)
            }
            ColumnKind::Pil => Cow::Owned(super::pil::to_png(stored)?),
        })
    }
}

impl ColumnKind {
    /// The size of [`ColumnKind::convert`]'s output, without building an `ndarray`'s
    /// `.npy` copy.
    pub(crate) fn field_len(&self, stored: &[u8]) -> Result<u64, Problem> {
        match self {
            ColumnKind::NdArray { dtype, shape } => {
                let (dtype, dims, values) =
                    parse_ndarray(*dtype, shape.as_deref(), stored).map_err(Problem::corrupt)?;
                Ok((npy_header(dtype, &dims).len() + values.len()) as u64)
            }
            _ => self.convert(stored).map(|v| v.len() as u64),
        }
    }
}

impl fmt::Display for ColumnKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnKind::Pass { name, .. } => f.write_str(name),
            ColumnKind::Pil => f.write_str("pil"),
            other => write!(f, "{}", other.suggested()),
        }
    }
}

/// Decimal text of one little-endian scalar of `dtype` (`bytes` holds exactly one).
pub(crate) fn scalar_text(dtype: ArrayDtype, bytes: &[u8]) -> String {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    let [b0, b1, b2, b3, ..] = b;
    match dtype {
        ArrayDtype::U8 => b0.to_string(),
        ArrayDtype::I8 => (b0 as i8).to_string(),
        ArrayDtype::U16 => u16::from_le_bytes([b0, b1]).to_string(),
        ArrayDtype::I16 => i16::from_le_bytes([b0, b1]).to_string(),
        ArrayDtype::U32 => u32::from_le_bytes([b0, b1, b2, b3]).to_string(),
        ArrayDtype::I32 => i32::from_le_bytes([b0, b1, b2, b3]).to_string(),
        ArrayDtype::U64 => u64::from_le_bytes(b).to_string(),
        ArrayDtype::I64 => i64::from_le_bytes(b).to_string(),
        ArrayDtype::F16 => f16_text(half::f16::from_le_bytes([b0, b1])),
        ArrayDtype::F32 => {
            let v = f32::from_le_bytes([b0, b1, b2, b3]);
            float_form(f64::from(v), || format!("{v}"), || format!("{v:e}"))
        }
        ArrayDtype::F64 => {
            let v = f64::from_le_bytes(b);
            float_form(v, || format!("{v}"), || format!("{v:e}"))
        }
    }
}

/// Plain form for 1e-4 <= |v| < 1e16 (and 0, inf, NaN), exponent form otherwise, as
/// Python's `repr` chooses. Both forms are Rust's shortest round-trip digits.
fn float_form(v: f64, plain: impl Fn() -> String, exp: impl Fn() -> String) -> String {
    let a = v.abs();
    if a.is_finite() && a != 0.0 && !(1e-4..1e16).contains(&a) {
        exp()
    } else {
        plain()
    }
}

/// The shortest decimal that converts back (through `f16::from_f64`, as our writer
/// converts) to exactly `v`.
fn f16_text(v: half::f16) -> String {
    let wide = f64::from(v);
    if !wide.is_finite() {
        return format!("{wide}");
    }
    for digits in 0..8 {
        let text = format!("{wide:.digits$e}");
        let Ok(back) = text.parse::<f64>() else {
            continue;
        };
        if half::f16::from_f64(back).to_bits() == v.to_bits() {
            return float_form(back, || format!("{back}"), || format!("{back:e}"));
        }
    }
    float_form(wide, || format!("{wide}"), || format!("{wide:e}"))
}

/// Why a stored `ndarray` value is damaged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NdarrayError {
    /// Shorter than its dtype code or shape.
    #[error("ends inside its ndarray {0}")]
    EndsInside(&'static str),
    /// A dtype code MDS does not define.
    #[error("has ndarray dtype code {0}, which MDS does not define")]
    DtypeCode(u8),
    /// Values of another size than the shape needs.
    #[error(
        "holds {len} bytes of ndarray values, its shape {dims:?} of {dtype} needs {}",
        want.map_or("more than any file".into(), |w| w.to_string())
    )]
    Size {
        /// Bytes of values.
        len: usize,
        /// The shape.
        dims: Vec<u64>,
        /// The dtype's name.
        dtype: &'static str,
        /// Bytes the shape needs (`None`: more than `u64`).
        want: Option<u64>,
    },
}

/// An `ndarray` value (§5.1 of the MDS notes) as a `.npy` file.
fn ndarray_npy(
    dtype: Option<ArrayDtype>,
    shape: Option<&[u64]>,
    stored: &[u8],
) -> Result<Vec<u8>, NdarrayError> {
    let (dtype, dims, values) = parse_ndarray(dtype, shape, stored)?;
    Ok(npy(dtype, &dims, values))
}

/// The value type, shape and values of a stored `ndarray` value.
fn parse_ndarray<'a>(
    dtype: Option<ArrayDtype>,
    shape: Option<&[u64]>,
    stored: &'a [u8],
) -> Result<(ArrayDtype, Vec<u64>, &'a [u8]), NdarrayError> {
    let mut rest = stored;
    let mut take = |n: usize, what: &'static str| -> Result<&[u8], NdarrayError> {
        if rest.len() < n {
            return Err(NdarrayError::EndsInside(what));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let dtype = match dtype {
        Some(d) => d,
        None => {
            let code = take(1, "dtype code")?[0];
            DTYPES
                .into_iter()
                .find(|d| d.code() == code)
                .ok_or(NdarrayError::DtypeCode(code))?
        }
    };
    let dims: Vec<u64> = match shape {
        Some(s) => s.to_vec(),
        None => {
            let byte = take(1, "shape header")?[0];
            let (ndim, width) = ((byte >> 2) as usize, 1usize << (byte & 3));
            let raw = take(ndim * width, "shape")?;
            raw.chunks(width)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b[..width].copy_from_slice(c);
                    u64::from_le_bytes(b)
                })
                .collect()
        }
    };
    let want = dims
        .iter()
        .try_fold(dtype.size() as u64, |n, &d| n.checked_mul(d));
    if want != Some(rest.len() as u64) {
        return Err(NdarrayError::Size {
            len: rest.len(),
            dims,
            dtype: dtype.name(),
            want,
        });
    }
    Ok((dtype, dims, rest))
}

/// A `.npy` file (format 1.0) of little-endian C-order values.
pub(crate) fn npy(dtype: ArrayDtype, shape: &[u64], values: &[u8]) -> Vec<u8> {
    let header = npy_header(dtype, shape);
    let mut out = Vec::with_capacity(header.len() + values.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(values);
    out
}

/// The magic, version, length and header dict of a `.npy` file, padded as numpy pads it
/// (spaces and a newline, so the values start at a multiple of 64 bytes).
fn npy_header(dtype: ArrayDtype, shape: &[u64]) -> Vec<u8> {
    let descr = match dtype {
        ArrayDtype::U8 => "|u1".to_string(),
        ArrayDtype::I8 => "|i1".to_string(),
        d => {
            let kind = match d {
                ArrayDtype::F16 | ArrayDtype::F32 | ArrayDtype::F64 => 'f',
                ArrayDtype::U16 | ArrayDtype::U32 | ArrayDtype::U64 => 'u',
                _ => 'i',
            };
            format!("<{kind}{}", d.size())
        }
    };
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    // At most 63 dimensions of 20 digits: always within format 1.0's 16-bit length.
    let mut out = Vec::with_capacity(10 + header.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}
