//! Errors of column encodings: a `--column` spelling that names no encoding
//! ([`EncodingError`]), and an input value a column cannot store ([`ValueError`]).

use super::dtype::ArrayDtype;

/// Why a text does not name a column encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodingError {
    /// A simple encoding given parameters (`int:3`).
    #[error("encoding `{0}` takes no parameters")]
    Parameters(String),
    /// `pkl`.
    #[error("`pkl` is unsafe (readers refuse it unless allow_unsafe_types); use bytes or json")]
    Pickle,
    /// An image-list encoding raw files cannot feed.
    #[error("`{0}` is not supported for raw files; use jpeg, png or bytes")]
    ImageList(String),
    /// A name MDS does not know.
    #[error(
        "unknown encoding `{0}`; use bytes, str, json, jpeg, png, int, int8..int64, uint8..uint64, float16/32/64, str_int, str_float, str_decimal or ndarray[:DTYPE[:SHAPE]]"
    )]
    Unknown(String),
    /// An ndarray dtype that is not one.
    #[error("`{0}` is not an ndarray dtype (uint8..uint64, int8..int64, float16/32/64)")]
    Dtype(String),
    /// An ndarray shape without a dtype.
    #[error("an ndarray shape needs a dtype (ndarray:DTYPE:SHAPE)")]
    ShapeWithoutDtype,
    /// An ndarray shape that is not a list of sizes.
    #[error("ndarray shape `{0}` is not a comma-separated list of sizes")]
    ShapeSyntax(String),
    /// An ndarray shape with no, empty or too many dimensions.
    #[error("ndarray shape `{0}` must have 1 to 63 dimensions, each at least 1")]
    ShapeDims(String),
    /// An ndarray shape whose size overflows.
    #[error("ndarray shape `{0}` is larger than any value")]
    ShapeTooLarge(String),
}

/// Why a value cannot be stored in a column; the text completes "`value` ...".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// Scalar text that is not UTF-8.
    #[error("is not UTF-8 text")]
    NotText,
    /// A `str` value that is not UTF-8.
    #[error("is not valid UTF-8 (byte {valid_up_to}) for a str column")]
    NotUtf8 {
        /// Bytes that are valid UTF-8.
        valid_up_to: usize,
    },
    /// A `json` value that does not parse (the parser's message).
    #[error("is not valid JSON: {0}")]
    Json(serde_json::Error),
    /// A `jpeg` value without the start-of-image marker.
    #[error("is not a JPEG (no start-of-image marker)")]
    NotJpeg,
    /// A `png` value without the PNG signature.
    #[error("is not a PNG (bad signature)")]
    NotPng,
    /// Text that is not an integer.
    #[error("is not an integer")]
    NotInteger,
    /// Text that is not a number.
    #[error("is not a number")]
    NotNumber,
    /// Text that is not a decimal.
    #[error("is not a decimal number")]
    NotDecimal,
    /// An integer outside 64 bits.
    #[error("is out of range for int (64-bit)")]
    IntRange,
    /// A scalar outside its dtype.
    #[error("{value} is out of range for {dtype}")]
    ScalarRange {
        /// The value.
        value: i128,
        /// The dtype's name.
        dtype: &'static str,
    },
    /// Scalar text that is not an integer.
    #[error("`{0}` is not an integer")]
    ScalarInteger(String),
    /// Scalar text that is not a number.
    #[error("`{0}` is not a number")]
    ScalarNumber(String),
    /// A `.npy` header that cannot be used.
    #[error(transparent)]
    Npy(#[from] NpyError),
    /// Raw values without a static dtype and shape.
    #[error("is not a .npy file (raw values need a static dtype and shape: ndarray:DTYPE:SHAPE)")]
    RawWithoutShape,
    /// Raw values of the wrong size.
    #[error("holds {len} bytes of raw values, the static shape needs {want}")]
    RawSize {
        /// Bytes given.
        len: usize,
        /// Bytes the static shape needs.
        want: u64,
    },
    /// A `.npy` array of another dtype than the column's.
    #[error("is a {found} array, the column holds {column}")]
    Dtype {
        /// The array's dtype.
        found: &'static str,
        /// The column's.
        column: &'static str,
    },
    /// A `.npy` array of another shape than the column's.
    #[error("has shape {found:?}, the column's static shape is {column:?}")]
    Shape {
        /// The array's shape.
        found: Vec<u64>,
        /// The column's.
        column: Vec<u64>,
    },
    /// A `.npy` file whose values are not the size its header says.
    #[error("holds {len} bytes of values, its shape needs {want}")]
    DataSize {
        /// Bytes after the header.
        len: usize,
        /// Bytes the shape needs.
        want: u64,
    },
    /// A `.npy` file shorter than its header.
    #[error("the .npy file is shorter than its header")]
    ShorterThanHeader,
}

impl ValueError {
    /// A scalar out of `dtype`'s range.
    pub(super) fn range(value: i128, dtype: ArrayDtype) -> Self {
        ValueError::ScalarRange {
            value,
            dtype: dtype.name(),
        }
    }
}

/// Why the header of a `.npy` file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    /// No magic.
    #[error("is not a .npy file (no \\x93NUMPY magic)")]
    Magic,
    /// A version other than 1, 2, 3.
    #[error("is a .npy file of unknown version {0}")]
    Version(u8),
    /// The header length field is cut off.
    #[error("the .npy header is truncated")]
    Truncated,
    /// The header is longer than the bytes seen.
    #[error("the .npy header is longer than the peeked bytes or the file")]
    Long,
    /// The header is not UTF-8.
    #[error("the .npy header is not text")]
    NotText,
    /// No `descr`.
    #[error("the .npy header has no descr")]
    NoDescr,
    /// An unsupported dtype.
    #[error("dtype `{0}` is not supported (little-endian u/i 1-8 bytes, f2/f4/f8)")]
    Descr(String),
    /// No `fortran_order`.
    #[error("the .npy header has no fortran_order")]
    NoFortranOrder,
    /// A Fortran-order array.
    #[error("is a Fortran-order array; save it in C order")]
    FortranOrder,
    /// No `shape`.
    #[error("the .npy header has no shape")]
    NoShape,
    /// A shape that is not a list of sizes.
    #[error("the .npy shape `({0})` is not a list of sizes")]
    ShapeSyntax(String),
    /// A shape MDS cannot store.
    #[error("array shape ({0}) cannot be stored: MDS needs 1 to 63 dimensions, none empty")]
    ShapeDims(String),
    /// A shape whose size overflows.
    #[error("array shape ({0}) is larger than any file")]
    ShapeTooLarge(String),
}
