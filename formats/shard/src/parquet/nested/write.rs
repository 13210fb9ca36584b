//! An Arrow value as JSON text (the shape is in the module docs of [`super`]).

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_cast::base64::{BASE64_STANDARD, Engine};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Fields};

use super::error::NestedError;

/// Appends the JSON text of `array[row]` to `out`. Refused (with why): a map value
/// with a key twice, which a JSON object cannot hold.
pub fn to_json(array: &dyn Array, row: usize, out: &mut Vec<u8>) -> Result<(), NestedError> {
    if array.is_null(row) {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    match array.data_type() {
        DataType::Null => out.extend_from_slice(b"null"),
        DataType::Boolean => out.extend_from_slice(if array.as_boolean().value(row) {
            b"true"
        } else {
            b"false"
        }),
        DataType::Int8 => number(out, array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => number(out, array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => number(out, array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => number(out, array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => number(out, array.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => number(out, array.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => number(out, array.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => number(out, array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float16 => float(out, array.as_primitive::<Float16Type>().value(row).into()),
        DataType::Float32 => float(out, array.as_primitive::<Float32Type>().value(row).into()),
        DataType::Float64 => float(out, array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => string(out, array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => string(out, array.as_string::<i64>().value(row)),
        DataType::Utf8View => string(out, array.as_string_view().value(row)),
        DataType::Binary => bytes(out, array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => bytes(out, array.as_binary::<i64>().value(row)),
        DataType::BinaryView => bytes(out, array.as_binary_view().value(row)),
        DataType::FixedSizeBinary(_) => bytes(out, array.as_fixed_size_binary().value(row)),
        DataType::Duration(_) => {
            let value = arrow_cast::cast(&array.slice(row, 1), &DataType::Int64)?;
            to_json(value.as_ref(), 0, out)?;
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            elements(out, list.value(row).as_ref())?;
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            elements(out, list.value(row).as_ref())?;
        }
        DataType::FixedSizeList(..) => {
            elements(out, array.as_fixed_size_list().value(row).as_ref())?;
        }
        DataType::ListView(_) => {
            elements(out, array.as_list_view::<i32>().value(row).as_ref())?;
        }
        DataType::LargeListView(_) => {
            elements(out, array.as_list_view::<i64>().value(row).as_ref())?;
        }
        DataType::Struct(fields) => struct_fields(out, array.as_struct(), fields, row)?,
        DataType::Map(..) => map_entries(out, &array.as_map().value(row))?,
        DataType::Dictionary(..) => {
            let dictionary = array.as_any_dictionary();
            let key = dictionary_key(dictionary.keys(), row)?;
            to_json(dictionary.values().as_ref(), key, out)?;
        }
        _ => {
            // Decimals, dates, times, timestamps, intervals: Arrow's text.
            let formatter = ArrayFormatter::try_new(array, &FormatOptions::default())?;
            string(out, &formatter.value(row).to_string());
        }
    }
    Ok(())
}

/// Appends a struct value as an object of its fields, in order.
fn struct_fields(
    out: &mut Vec<u8>,
    array: &StructArray,
    fields: &Fields,
    row: usize,
) -> Result<(), NestedError> {
    out.push(b'{');
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, field.name());
        out.push(b':');
        to_json(array.column(i).as_ref(), row, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// Appends a map value (its entries) as an object; a key twice is refused.
fn map_entries(out: &mut Vec<u8>, entries: &StructArray) -> Result<(), NestedError> {
    let (keys, values) = (entries.column(0), entries.column(1));
    let mut seen = HashSet::new();
    out.push(b'{');
    for i in 0..entries.len() {
        if i > 0 {
            out.push(b',');
        }
        let key = key_text(keys, i)?;
        string(out, &key);
        if !seen.insert(key) {
            return Err(NestedError::DuplicateKey(key_text(keys, i)?));
        }
        out.push(b':');
        to_json(values.as_ref(), i, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// The index of row `row` of a dictionary's `keys` into its values.
fn dictionary_key(keys: &dyn Array, row: usize) -> Result<usize, NestedError> {
    let key: i128 = match keys.data_type() {
        DataType::Int8 => keys.as_primitive::<Int8Type>().value(row).into(),
        DataType::Int16 => keys.as_primitive::<Int16Type>().value(row).into(),
        DataType::Int32 => keys.as_primitive::<Int32Type>().value(row).into(),
        DataType::Int64 => keys.as_primitive::<Int64Type>().value(row).into(),
        DataType::UInt8 => keys.as_primitive::<UInt8Type>().value(row).into(),
        DataType::UInt16 => keys.as_primitive::<UInt16Type>().value(row).into(),
        DataType::UInt32 => keys.as_primitive::<UInt32Type>().value(row).into(),
        DataType::UInt64 => keys.as_primitive::<UInt64Type>().value(row).into(),
        other => return Err(NestedError::DictionaryKeys(other.clone())),
    };
    usize::try_from(key).map_err(|_| NestedError::DictionaryKey(key))
}

fn elements(out: &mut Vec<u8>, values: &dyn Array) -> Result<(), NestedError> {
    out.push(b'[');
    for i in 0..values.len() {
        if i > 0 {
            out.push(b',');
        }
        to_json(values, i, out)?;
    }
    out.push(b']');
    Ok(())
}

/// A map key as an object key: a string as itself, anything else as its JSON text.
fn key_text(keys: &ArrayRef, i: usize) -> Result<String, NestedError> {
    match keys.data_type() {
        DataType::Utf8 => Ok(keys.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Ok(keys.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Ok(keys.as_string_view().value(i).to_string()),
        _ => {
            let mut text = Vec::new();
            to_json(keys.as_ref(), i, &mut text)?;
            let text = String::from_utf8(text).expect("JSON text is UTF-8");
            // A string-valued key (base64, a date) without its quotes.
            Ok(match serde_json::from_str::<String>(&text) {
                Ok(inner) => inner,
                Err(_) => text,
            })
        }
    }
}

fn number(out: &mut Vec<u8>, n: impl std::fmt::Display) {
    use std::io::Write;
    write!(out, "{n}").expect("writing to a Vec");
}

fn float(out: &mut Vec<u8>, x: f64) {
    use std::io::Write;
    if x.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    } else {
        // `{:?}` is the shortest text that reads back as `x`, with an exponent for
        // very large and small values (`1e300`, `1.5e-7`), always valid JSON.
        write!(out, "{x:?}").expect("writing to a Vec");
    }
}

fn string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec");
}

fn bytes(out: &mut Vec<u8>, data: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(BASE64_STANDARD.encode(data).as_bytes());
    out.push(b'"');
}
