//! [`Encoding`]: a column encoding, parsed from its MDS spelling, and the conversion of an
//! input value into the bytes the column stores.

use std::borrow::Cow;
use std::fmt;

use super::dtype::ArrayDtype;
use super::error::{EncodingError, ValueError};
use super::npy::{nd_prefix_len, ndarray, parse_npy};
use super::scalar::{is_decimal, parse_float, parse_int, scalar};

/// A column encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Raw bytes.
    Bytes,
    /// UTF-8 text.
    Str,
    /// JSON text.
    Json,
    /// JPEG file bytes (decoded to an image by readers).
    Jpeg,
    /// PNG file bytes.
    Png,
    /// Text an integer parses from.
    StrInt,
    /// Text a float parses from.
    StrFloat,
    /// Text a decimal parses from.
    StrDecimal,
    /// `int`: a 64-bit integer (decoded as a Python int).
    Int,
    /// A numpy scalar (`int8`, ..., `float64`).
    Scalar(ArrayDtype),
    /// `ndarray[:dtype[:shape]]`.
    NdArray {
        /// Static value type.
        dtype: Option<ArrayDtype>,
        /// Static shape (needs a static dtype).
        shape: Option<Vec<u64>>,
    },
    /// The JSON text of a nested Parquet value (a list, map or struct) of this Arrow
    /// type ([`crate::parquet::nested`]): `json` to formats without the type (MDS), the
    /// type itself to Parquet. Only a Parquet input suggests it; `--column` cannot name
    /// it.
    Nested(arrow_schema::DataType),
}

impl Encoding {
    /// Parses an encoding name as MDS spells it (`bytes`, `int`, `ndarray:float32:3,224`).
    pub fn parse(text: &str) -> Result<Self, EncodingError> {
        let mut parts = text.splitn(3, ':');
        let name = parts.next().unwrap_or_default();
        let simple = match name {
            "bytes" => Some(Encoding::Bytes),
            "str" => Some(Encoding::Str),
            "json" => Some(Encoding::Json),
            "jpeg" => Some(Encoding::Jpeg),
            "png" => Some(Encoding::Png),
            "str_int" => Some(Encoding::StrInt),
            "str_float" => Some(Encoding::StrFloat),
            "str_decimal" => Some(Encoding::StrDecimal),
            "int" => Some(Encoding::Int),
            _ => ArrayDtype::from_name(name).map(Encoding::Scalar),
        };
        if let Some(encoding) = simple {
            return if text.contains(':') {
                Err(EncodingError::Parameters(name.to_string()))
            } else {
                Ok(encoding)
            };
        }
        if name != "ndarray" {
            return Err(match name {
                "pkl" => EncodingError::Pickle,
                "pil" | "list[pil]" | "list[jpeg]" | "list[png]" | "jpeg_array" | "jpegarray" => {
                    EncodingError::ImageList(name.to_string())
                }
                _ => EncodingError::Unknown(name.to_string()),
            });
        }
        let dtype = match parts.next() {
            None | Some("") => None,
            Some(d) => {
                Some(ArrayDtype::from_name(d).ok_or_else(|| EncodingError::Dtype(d.to_string()))?)
            }
        };
        let shape = match parts.next() {
            None => None,
            Some(s) => {
                if dtype.is_none() {
                    return Err(EncodingError::ShapeWithoutDtype);
                }
                let dims: Result<Vec<u64>, _> =
                    s.split(',').map(|d| d.trim().parse::<u64>()).collect();
                let dims = dims.map_err(|_| EncodingError::ShapeSyntax(s.to_string()))?;
                if dims.is_empty() || dims.contains(&0) || dims.len() > 63 {
                    return Err(EncodingError::ShapeDims(s.to_string()));
                }
                let size = dtype.map_or(1, |d| d.size() as u64);
                if dims
                    .iter()
                    .try_fold(size, |n, &dim| n.checked_mul(dim))
                    .is_none()
                {
                    return Err(EncodingError::ShapeTooLarge(s.to_string()));
                }
                Some(dims)
            }
        };
        Ok(Encoding::NdArray { dtype, shape })
    }

    /// The default encoding of a field by its name: JSON for `json`, text for text
    /// extensions, bytes for everything else.
    pub fn for_field(field: &str) -> Self {
        match field.rsplit('.').next().unwrap_or(field) {
            "json" => Encoding::Json,
            "txt" | "text" | "md" | "caption" | "csv" | "tsv" | "html" | "xml" | "yaml" | "yml" => {
                Encoding::Str
            }
            _ => Encoding::Bytes,
        }
    }

    /// Fixed stored size, or `None` for variable-size columns.
    pub fn fixed_size(&self) -> Option<u64> {
        match self {
            Encoding::Int => Some(8),
            Encoding::Scalar(d) => Some(d.size() as u64),
            Encoding::NdArray {
                dtype: Some(d),
                shape: Some(s),
            } => Some(s.iter().product::<u64>() * d.size() as u64),
            _ => None,
        }
    }

    /// Bytes of a value's head needed to know its stored size (ndarray from `.npy`).
    pub fn peek_len(&self) -> usize {
        match self {
            Encoding::NdArray { .. } if self.fixed_size().is_none() => 4096,
            _ => 0,
        }
    }

    /// Stored size of a variable-size value of `size` input bytes starting with `head`.
    pub fn encoded_len(&self, size: u64, head: &[u8]) -> Result<u64, ValueError> {
        match self {
            Encoding::NdArray { dtype, shape } if self.fixed_size().is_none() => {
                let npy = parse_npy(head)?;
                let data = size
                    .checked_sub(npy.header_len as u64)
                    .ok_or(ValueError::ShorterThanHeader)?;
                Ok(nd_prefix_len(*dtype, shape.as_deref(), &npy.shape) + data)
            }
            _ => Ok(self.fixed_size().unwrap_or(size)),
        }
    }

    /// [`Encoding::encode`] for a value already checked by `encode` (pass-through
    /// encodings are not checked again).
    pub fn convert<'a>(&self, input: &'a [u8]) -> Result<Cow<'a, [u8]>, ValueError> {
        match self {
            Encoding::Bytes
            | Encoding::Str
            | Encoding::Json
            | Encoding::Nested(_)
            | Encoding::Jpeg
            | Encoding::Png
            | Encoding::StrInt
            | Encoding::StrFloat
            | Encoding::StrDecimal => Ok(Cow::Borrowed(input)),
            _ => self.encode(input),
        }
    }

    /// Converts an input value into the bytes the column stores.
    pub fn encode<'a>(&self, input: &'a [u8]) -> Result<Cow<'a, [u8]>, ValueError> {
        let text = || {
            std::str::from_utf8(input)
                .map_err(|_| ValueError::NotText)
                .map(str::trim)
        };
        match self {
            Encoding::Bytes => Ok(Cow::Borrowed(input)),
            Encoding::Str => {
                std::str::from_utf8(input).map_err(|e| ValueError::NotUtf8 {
                    valid_up_to: e.valid_up_to(),
                })?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::Json | Encoding::Nested(_) => {
                serde_json::from_slice::<serde::de::IgnoredAny>(input).map_err(ValueError::Json)?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::Jpeg => {
                if !input.starts_with(&[0xff, 0xd8]) {
                    return Err(ValueError::NotJpeg);
                }
                Ok(Cow::Borrowed(input))
            }
            Encoding::Png => {
                if !input.starts_with(b"\x89PNG\r\n\x1a\n") {
                    return Err(ValueError::NotPng);
                }
                Ok(Cow::Borrowed(input))
            }
            Encoding::StrInt => {
                parse_int(text()?).ok_or(ValueError::NotInteger)?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::StrFloat => {
                parse_float(text()?).ok_or(ValueError::NotNumber)?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::StrDecimal => {
                if !is_decimal(text()?) {
                    return Err(ValueError::NotDecimal);
                }
                Ok(Cow::Borrowed(input))
            }
            Encoding::Int => {
                let value = parse_int(text()?).ok_or(ValueError::NotInteger)?;
                let value = i64::try_from(value).map_err(|_| ValueError::IntRange)?;
                Ok(Cow::Owned(value.to_le_bytes().to_vec()))
            }
            Encoding::Scalar(dtype) => scalar(*dtype, text()?).map(Cow::Owned),
            Encoding::NdArray { dtype, shape } => {
                ndarray(*dtype, shape.as_deref(), input).map(Cow::Owned)
            }
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Encoding::Bytes => f.write_str("bytes"),
            Encoding::Str => f.write_str("str"),
            Encoding::Json | Encoding::Nested(_) => f.write_str("json"),
            Encoding::Jpeg => f.write_str("jpeg"),
            Encoding::Png => f.write_str("png"),
            Encoding::StrInt => f.write_str("str_int"),
            Encoding::StrFloat => f.write_str("str_float"),
            Encoding::StrDecimal => f.write_str("str_decimal"),
            Encoding::Int => f.write_str("int"),
            Encoding::Scalar(d) => f.write_str(d.name()),
            Encoding::NdArray { dtype, shape } => {
                f.write_str("ndarray")?;
                if let Some(d) = dtype {
                    write!(f, ":{}", d.name())?;
                }
                if let Some(s) = shape {
                    let dims: Vec<String> = s.iter().map(u64::to_string).collect();
                    write!(f, ":{}", dims.join(","))?;
                }
                Ok(())
            }
        }
    }
}
