//! Arrow columns as sample fields, shared by the inputs that read Arrow record batches
//! (Parquet files, Hugging Face `save_to_disk` directories): which column is which
//! field ([`field_columns`]), the bytes of a value ([`value_bytes`]) and the encoding a
//! column's type suggests to typed outputs ([`suggested_encoding`]).
//!
//! Binary and string values are the field's bytes, nested values (lists, maps,
//! structs) their JSON text ([`crate::parquet::nested`]), other types their text (`3`,
//! `0.5`, `true`, `2024-01-01T00:00:00`); nulls are absent fields.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_cast::display::ArrayFormatter;
use arrow_schema::{DataType, Schema};

use crate::columns::Encoding;
use crate::parquet::nested;

/// The bytes of a value: raw for binary and string columns, JSON for nested ones, text
/// for the rest. `Err` for a nested value JSON cannot hold (a map with a key twice).
pub(crate) fn value_bytes(
    array: &ArrayRef,
    row: usize,
    formatter: Option<&ArrayFormatter<'_>>,
) -> Result<Option<Vec<u8>>, nested::NestedError> {
    if array.is_null(row) {
        return Ok(None);
    }
    Ok(Some(match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().value(row).to_vec(),
        DataType::LargeBinary => array.as_binary::<i64>().value(row).to_vec(),
        DataType::BinaryView => array.as_binary_view().value(row).to_vec(),
        DataType::FixedSizeBinary(_) => array.as_fixed_size_binary().value(row).to_vec(),
        DataType::Utf8 => array.as_string::<i32>().value(row).as_bytes().to_vec(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).as_bytes().to_vec(),
        DataType::Utf8View => array.as_string_view().value(row).as_bytes().to_vec(),
        t if nested::is_nested(t) => {
            let mut out = Vec::new();
            nested::to_json(array.as_ref(), row, &mut out)?;
            out
        }
        _ => formatter
            .map(|f| f.value(row).to_string().into_bytes())
            .unwrap_or_default(),
    }))
}

/// The encoding a column of `data_type` suggests to typed outputs (text, integers,
/// floats, nested values), or `None` (bytes).
pub(crate) fn suggested_encoding(data_type: &DataType) -> Option<Encoding> {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Some(Encoding::Str),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32 => Some(Encoding::Int),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            Some(Encoding::parse("float64").expect("a known encoding"))
        }
        DataType::Boolean
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(..)
        | DataType::Decimal128(..) => Some(Encoding::Str),
        DataType::Dictionary(_, v)
            if matches!(
                **v,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) =>
        {
            Some(Encoding::Str)
        }
        t if nested::is_nested(t) => Some(Encoding::Nested(t.clone())),
        _ => None,
    }
}

/// Why a column cannot be a field.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ColumnNameError {
    /// Empty, with `/`, non-ASCII or starting with `__`.
    #[error("has column `{0}`, which cannot be a field name (empty, `/`, non-ASCII or `__`)")]
    Name(String),
    /// Two columns of one lowercased name.
    #[error("has columns that differ only by case: `{0}`")]
    Case(String),
}

/// The fields of `schema`'s columns other than `key_column`: (field name, column index)
/// in field-name order (a column's name lowercased), and the encodings their types
/// suggest by field name.
pub(crate) type FieldColumns = (Vec<(Arc<str>, usize)>, BTreeMap<String, Encoding>);

/// See [`FieldColumns`].
pub(crate) fn field_columns(
    schema: &Schema,
    key_column: &str,
) -> Result<FieldColumns, ColumnNameError> {
    let mut columns = Vec::new();
    let mut encodings = BTreeMap::new();
    let mut seen = HashSet::new();
    for (i, field) in schema.fields().iter().enumerate() {
        if field.name() == key_column {
            continue;
        }
        let name = field.name().to_ascii_lowercase();
        if name.is_empty() || name.contains('/') || !name.is_ascii() || name.starts_with("__") {
            return Err(ColumnNameError::Name(field.name().clone()));
        }
        if !seen.insert(name.clone()) {
            return Err(ColumnNameError::Case(field.name().clone()));
        }
        if let Some(encoding) = suggested_encoding(field.data_type()) {
            encodings.insert(name.clone(), encoding);
        }
        columns.push((Arc::from(name.as_str()), i));
    }
    columns.sort_by(|a: &(Arc<str>, usize), b| a.0.cmp(&b.0));
    Ok((columns, encodings))
}
