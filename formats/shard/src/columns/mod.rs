//! MDS column encodings (`../shared/reference/mds.md` §5) and the conversion of a raw
//! input (a file's bytes, a Parquet value) into the bytes a column stores.
//!
//! Pass-through encodings (`bytes`, `str`, `json`, `jpeg`, `png`, `str_int`,
//! `str_float`, `str_decimal`) store the input unchanged after checking it decodes:
//! MDSWriter stores `bytes` objects unchanged whatever the encoding, and the readers
//! parse them the same way. Scalars parse the input as text (`3`, `0.5`). `ndarray`
//! takes a `.npy` file (or, with a static dtype and shape, raw little-endian values).

mod dtype;
mod encoding;
mod error;
mod npy;
mod scalar;

pub use self::dtype::ArrayDtype;
pub use self::encoding::Encoding;
pub use self::error::{EncodingError, NpyError, ValueError};

#[cfg(test)]
mod tests;
