//! Nested Parquet values (lists, maps, structs) as JSON text, and back.
//!
//! A field of a nested column holds the JSON text of its value, so WebDataset members
//! and MDS `json` columns give readers the value itself (`json.loads` gives back the
//! lists and dicts pyarrow's `to_pylist` gives), and a Parquet output parses it back
//! into the column's Arrow type ([`from_json`]). The shape:
//!
//! - a list (any list type) is a JSON array, a struct a JSON object of its fields in
//!   schema order, a null `null`: `["a, b"]` and `["a","b"]`, `[null]`, `[""]` and `[]`
//!   all differ;
//! - a map is a JSON object `{"key": value}`, told apart from a list of pairs
//!   (`[["key", value]]`) by its braces; a key that is not a string is its JSON text
//!   (`{"1": "a"}` for an int key); a map with a key twice cannot be written as an
//!   object and is refused with the row and column;
//! - numbers are JSON numbers (floats in their shortest exact form, `float32` values as
//!   the `float64` they widen to, which is what Python sees); NaN and infinities, which
//!   JSON has no number for, are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`;
//! - binary values are base64 strings (standard alphabet, padded); decimals, dates,
//!   times and timestamps are strings in Arrow's text form (`"1.10"`,
//!   `"2024-01-01T00:00:00"`); durations are integers in their unit.

mod error;
mod read;
mod write;

use arrow_schema::DataType;

pub use error::NestedError;
pub use read::from_json;
pub use write::to_json;

/// True for the types written as JSON (lists, maps, structs).
pub fn is_nested(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::Map(..)
            | DataType::Struct(_)
    ) || matches!(data_type, DataType::Dictionary(_, v) if is_nested(v))
}

/// True when a value of `data_type` written by [`to_json`] is read back by
/// [`from_json`] into the same value: a Parquet output can keep the column's type.
pub fn carries(data_type: &DataType) -> bool {
    match data_type {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..)
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(..)
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Duration(_) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            carries(f.data_type())
        }
        DataType::Struct(fields) => fields.iter().all(|f| carries(f.data_type())),
        DataType::Map(entries, _) => carries(entries.data_type()),
        DataType::Dictionary(_, values) => carries(values),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
