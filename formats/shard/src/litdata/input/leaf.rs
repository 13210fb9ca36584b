//! How each LitData serializer's stored bytes become field bytes our writers take back:
//!
//! - `str`, `text`, `bytes`, `jpeg`: the stored bytes (UTF-8 text, raw bytes, the JPEG
//!   file);
//! - `int` (i64) and `float` (f64): decimal text, floats in their shortest round-trip
//!   form (exponent form outside 1e-4..1e16, as Python's `repr`), as MDS and Parquet
//!   inputs give numbers; `bool`: `true` / `false`;
//! - `no_header_numpy:D` (1-D arrays of dtype code `D`) and `numpy` (dtype code, rank and
//!   shape in a header): a `.npy` file (version 1.0, C order), as MDS `ndarray` columns;
//! - `pil` (`u32 width, height, len(mode)`, the mode, raw pixels): a PNG of the pixels
//!   written by the image crate (lossless for modes `L`, `LA`, `RGB`, `RGBA`, `I;16`;
//!   other modes leave the sample out, with the reason);
//! - `json` (a list or dict, litdata's `JsonLeaf`): its JSON text ([`super::nested`]),
//!   as Parquet and hf inputs give nested values; an Arrow footer's list or struct
//!   column gives the same text.
//!
//! Any other serializer (`tensor`, `video`, `pickle`, ...) is refused when the dataset is
//! opened.

use std::borrow::Cow;

use crate::columns::{ArrayDtype, Encoding};
use crate::mds::input::problem::Problem;
use crate::mds::input::values::{npy, scalar_text};

/// LitData's numpy dtype codes (`litdata.constants._NUMPY_SCTYPES`) that `.npy` fields
/// hold: `int8` .. `float64`; the others (complex, bool, object, str, void) are refused.
const DTYPES: [ArrayDtype; 11] = [
    ArrayDtype::I8,
    ArrayDtype::I16,
    ArrayDtype::I32,
    ArrayDtype::I64,
    ArrayDtype::U8,
    ArrayDtype::U16,
    ArrayDtype::U32,
    ArrayDtype::U64,
    ArrayDtype::F16,
    ArrayDtype::F32,
    ArrayDtype::F64,
];

/// The serializers the input reads: what readers read back from [`Kind::from_format`].
pub const READ: &str =
    "str, text, bytes, jpeg, int, float, bool, no_header_numpy, numpy, pil, json";

/// How a leaf's stored bytes become field bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// The stored bytes; `text` when they are a `str`.
    Pass { text: bool, jpeg: bool },
    /// `int`: i64.
    Int,
    /// `float`: f64.
    Float,
    /// `bool`: one byte.
    Bool,
    /// `no_header_numpy:D`.
    Flat(ArrayDtype),
    /// `numpy`.
    Numpy,
    /// `pil`.
    Pil,
    /// `json`: litdata's nested encoding, or the JSON text an Arrow footer gives.
    Json,
}

impl Kind {
    /// The kind of a `data_format` entry, or `None` for a serializer the input does not
    /// read.
    pub fn from_format(format: &str) -> Option<Kind> {
        let (name, arg) = format.split_once(':').unwrap_or((format, ""));
        Some(match (name, arg) {
            ("str" | "text", "") => Kind::Pass {
                text: true,
                jpeg: false,
            },
            ("bytes", "") => Kind::Pass {
                text: false,
                jpeg: false,
            },
            ("jpeg", "") => Kind::Pass {
                text: false,
                jpeg: true,
            },
            ("int", "") => Kind::Int,
            ("float", "") => Kind::Float,
            ("bool", "") => Kind::Bool,
            ("no_header_numpy", code) => Kind::Flat(*DTYPES.get(code.parse::<usize>().ok()?)?),
            ("numpy", "") => Kind::Numpy,
            ("pil", "") => Kind::Pil,
            ("json", "") => Kind::Json,
            _ => return None,
        })
    }

    /// True when values are text (a `str` that can be a sample key).
    pub fn is_text(&self) -> bool {
        matches!(self, Kind::Pass { text: true, .. })
    }

    /// The encoding our writers take the field bytes with.
    pub fn suggested(&self) -> Encoding {
        match self {
            Kind::Pass { text: true, .. } => Encoding::Str,
            Kind::Pass { jpeg: true, .. } => Encoding::Jpeg,
            Kind::Pass { .. } => Encoding::Bytes,
            Kind::Int => Encoding::Int,
            Kind::Float => Encoding::Scalar(ArrayDtype::F64),
            Kind::Bool => Encoding::Str,
            Kind::Flat(d) => Encoding::NdArray {
                dtype: Some(*d),
                shape: None,
            },
            Kind::Numpy => Encoding::NdArray {
                dtype: None,
                shape: None,
            },
            Kind::Pil => Encoding::Png,
            Kind::Json => Encoding::Json,
        }
    }

    /// The field bytes of a stored value.
    pub fn convert<'a>(&self, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, Problem> {
        let exact = |want: usize, name: &str| -> Result<(), Problem> {
            if stored.len() == want {
                Ok(())
            } else {
                Err(Problem::Corrupt(format!(
                    "holds {} bytes, LitData's `{name}` serializer stores {want}",
                    stored.len()
                )))
            }
        };
        Ok(match self {
            Kind::Pass { text, .. } => {
                if *text && std::str::from_utf8(stored).is_err() {
                    return Err(Problem::Corrupt("is a `str` that is not UTF-8".into()));
                }
                Cow::Borrowed(stored)
            }
            Kind::Int => {
                exact(8, "int")?;
                Cow::Owned(scalar_text(ArrayDtype::I64, stored).into_bytes())
            }
            Kind::Float => {
                exact(8, "float")?;
                Cow::Owned(scalar_text(ArrayDtype::F64, stored).into_bytes())
            }
            Kind::Bool => {
                exact(1, "bool")?;
                Cow::Borrowed(if stored[0] != 0 { b"true" } else { b"false" })
            }
            Kind::Flat(d) => {
                if !stored.len().is_multiple_of(d.size()) {
                    return Err(Problem::Corrupt(format!(
                        "holds {} bytes, not a whole number of {} values",
                        stored.len(),
                        d.name()
                    )));
                }
                Cow::Owned(npy(*d, &[(stored.len() / d.size()) as u64], stored))
            }
            Kind::Numpy => {
                let (d, dims, values) = numpy(stored)?;
                Cow::Owned(npy(d, &dims, values))
            }
            Kind::Pil => Cow::Owned(crate::mds::input::pil::to_png(stored)?),
            Kind::Json => Cow::Owned(super::nested::to_json(stored)?),
        })
    }
}

/// The dtype, shape and values of a `numpy` value: `u32` dtype code, `u32` rank, a `u32`
/// per dimension, then the C-order values.
fn numpy(stored: &[u8]) -> Result<(ArrayDtype, Vec<u64>, &[u8]), Problem> {
    let word = |i: usize| {
        stored
            .get(4 * i..4 * i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| Problem::Corrupt("ends inside its numpy header".into()))
    };
    let code = word(0)?;
    let dtype = *DTYPES.get(code as usize).ok_or_else(|| {
        Problem::Unsupported(format!(
            "is a numpy array of LitData dtype code {code} (complex, bool, object or text), which no .npy field of shardsmith holds"
        ))
    })?;
    let rank = word(1)? as usize;
    let dims: Vec<u64> = (0..rank)
        .map(|i| word(2 + i).map(u64::from))
        .collect::<Result<_, _>>()?;
    let values = &stored[8 + 4 * rank..];
    let want = dims
        .iter()
        .try_fold(dtype.size() as u64, |n, &d| n.checked_mul(d));
    if want != Some(values.len() as u64) {
        return Err(Problem::Corrupt(format!(
            "holds {} bytes of numpy values, its shape {dims:?} of {} needs {}",
            values.len(),
            dtype.name(),
            want.map_or("more than any file".to_string(), |w| w.to_string())
        )));
    }
    Ok((dtype, dims, values))
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn values_become_the_fields_our_writers_take() {
        let kind = |f: &str| Kind::from_format(f).unwrap();
        assert_eq!(
            &*kind("int").convert(&(-5i64).to_le_bytes()).unwrap(),
            b"-5"
        );
        assert_eq!(
            &*kind("float").convert(&0.5f64.to_le_bytes()).unwrap(),
            b"0.5"
        );
        assert_eq!(&*kind("bool").convert(&[1]).unwrap(), b"true");
        assert_eq!(&*kind("str").convert(b"hi").unwrap(), b"hi");
        let flat = kind("no_header_numpy:1").convert(&[1, 0, 2, 0]).unwrap();
        assert!(flat.starts_with(b"\x93NUMPY"));
        assert!(
            String::from_utf8_lossy(&flat)
                .contains("'descr': '<i2', 'fortran_order': False, 'shape': (2,)")
        );
        let mut numpy = Vec::new();
        for w in [9u32, 2, 1, 2] {
            numpy.extend_from_slice(&w.to_le_bytes());
        }
        numpy.extend_from_slice(&[0; 8]);
        let field = kind("numpy").convert(&numpy).unwrap();
        assert!(
            String::from_utf8_lossy(&field)
                .contains("'<f4', 'fortran_order': False, 'shape': (1, 2)")
        );
        assert!(kind("numpy").convert(&numpy[..12]).is_err());
        assert!(kind("int").convert(&[0; 4]).is_err());
        for refused in [
            "tensor",
            "pickle",
            "video",
            "no_header_numpy:13",
            "no_header_tensor:1",
        ] {
            assert!(Kind::from_format(refused).is_none(), "{refused}");
        }
    }
}
