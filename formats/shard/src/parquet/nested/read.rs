//! JSON text back into an Arrow array of a nested type (the inverse of
//! [`super::to_json`] for the types [`super::carries`]).

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder};
use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, LargeListArray, ListArray, MapArray,
    NullArray, StringArray, StructArray,
};
use arrow_cast::base64::{BASE64_STANDARD, Engine};
use arrow_cast::{CastOptions, cast_with_options};
use arrow_schema::{DataType, FieldRef, Fields};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::NestedError;

/// A JSON value whose objects keep their entries in order (and repeated keys, which
/// are then refused by name rather than merged).
#[derive(Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct JsonVisitor;
        impl<'de> Visitor<'de> for JsonVisitor {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry()? {
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }
        deserializer.deserialize_any(JsonVisitor)
    }
}

impl Json {
    fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }
}

/// An array of `data_type` from the JSON texts of its values (`None`: a null).
pub fn from_json(data_type: &DataType, values: &[Option<&[u8]>]) -> Result<ArrayRef, NestedError> {
    let parsed: Vec<Option<Json>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.map(|text| {
                serde_json::from_slice::<Json>(text)
                    .map_err(|source| NestedError::NotJson { index: i, source })
            })
            .transpose()
        })
        .collect::<Result<_, _>>()?;
    let refs: Vec<Option<&Json>> = parsed.iter().map(Option::as_ref).collect();
    build(data_type, &refs)
}

fn nulls(values: &[Option<&Json>]) -> Option<arrow_buffer::NullBuffer> {
    let valid: Vec<bool> = values
        .iter()
        .map(|v| v.is_some_and(|j| !j.is_null()))
        .collect();
    valid
        .iter()
        .any(|v| !v)
        .then(|| arrow_buffer::NullBuffer::from(valid))
}

fn items<'a>(value: Option<&'a Json>, what: &str) -> Result<&'a [Json], NestedError> {
    match value {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Array(items)) => Ok(items),
        Some(other) => Err(NestedError::expected(what, other)),
    }
}

fn build(data_type: &DataType, values: &[Option<&Json>]) -> Result<ArrayRef, NestedError> {
    Ok(match data_type {
        DataType::Null => Arc::new(NullArray::new(values.len())),
        DataType::Boolean => booleans(values)?,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            cast(floats(values)?, data_type)?
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => cast(binaries(values)?, data_type)?,
        DataType::List(field) => {
            let (offsets, child) = list_parts::<i32>(field, values)?;
            Arc::new(ListArray::try_new(
                field.clone(),
                offsets,
                child,
                nulls(values),
            )?)
        }
        DataType::LargeList(field) => {
            let (offsets, child) = list_parts::<i64>(field, values)?;
            Arc::new(LargeListArray::try_new(
                field.clone(),
                offsets,
                child,
                nulls(values),
            )?)
        }
        DataType::FixedSizeList(field, size) => fixed_size_list(field, *size, values)?,
        DataType::Struct(fields) => structs(fields, values)?,
        DataType::Map(entries, sorted) => map(entries, *sorted, values)?,
        DataType::Dictionary(_, value_type) => cast(build(value_type, values)?, data_type)?,
        _ => texts(data_type, values)?,
    })
}

/// A boolean column.
fn booleans(values: &[Option<&Json>]) -> Result<ArrayRef, NestedError> {
    let mut b = BooleanBuilder::with_capacity(values.len());
    for v in values {
        match v {
            None | Some(Json::Null) => b.append_null(),
            Some(Json::Bool(x)) => b.append_value(*x),
            Some(other) => return Err(NestedError::expected("a boolean", other)),
        }
    }
    Ok(Arc::new(b.finish()))
}

/// A float64 column (cast to the column's float type by the caller); `NaN` and the
/// infinities come as strings.
fn floats(values: &[Option<&Json>]) -> Result<ArrayRef, NestedError> {
    let mut b = Float64Builder::with_capacity(values.len());
    for v in values {
        match v {
            None | Some(Json::Null) => b.append_null(),
            Some(Json::Number(n)) => b.append_value(n.as_f64().unwrap_or(f64::NAN)),
            Some(Json::String(s)) if s == "NaN" => b.append_value(f64::NAN),
            Some(Json::String(s)) if s == "Infinity" => b.append_value(f64::INFINITY),
            Some(Json::String(s)) if s == "-Infinity" => b.append_value(f64::NEG_INFINITY),
            Some(other) => return Err(NestedError::expected("a number", other)),
        }
    }
    Ok(Arc::new(b.finish()))
}

/// A binary column from base64 strings (cast to the column's binary type by the caller).
fn binaries(values: &[Option<&Json>]) -> Result<ArrayRef, NestedError> {
    let decoded: Vec<Option<Vec<u8>>> = values
        .iter()
        .map(|v| match v {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => {
                BASE64_STANDARD
                    .decode(s)
                    .map(Some)
                    .map_err(|e| NestedError::NotBase64 {
                        source: Box::new(e),
                        text: s.clone(),
                    })
            }
            Some(other) => Err(NestedError::expected("a base64 string", other)),
        })
        .collect::<Result<_, _>>()?;
    let array = BinaryArray::from_iter(decoded.iter().map(|v| v.as_deref()));
    Ok(Arc::new(array))
}

/// A fixed-size list column: every non-null value a list of `size` items.
fn fixed_size_list(
    field: &FieldRef,
    size: i32,
    values: &[Option<&Json>],
) -> Result<ArrayRef, NestedError> {
    let n = usize::try_from(size).map_err(|_| NestedError::ListSize(size))?;
    let mut children = Vec::with_capacity(values.len() * n);
    for v in values {
        let row = items(*v, "a list")?;
        if v.is_some_and(|j| !j.is_null()) && row.len() != n {
            return Err(NestedError::ListLength {
                want: n,
                found: row.len(),
            });
        }
        if row.is_empty() {
            children.extend(std::iter::repeat_n(None, n));
        } else {
            children.extend(row.iter().map(Some));
        }
    }
    let child = build(field.data_type(), &children)?;
    Ok(Arc::new(FixedSizeListArray::try_new(
        field.clone(),
        size,
        child,
        nulls(values),
    )?))
}

/// A struct column: each field from the objects' entries of its name.
fn structs(fields: &Fields, values: &[Option<&Json>]) -> Result<ArrayRef, NestedError> {
    let mut columns = Vec::with_capacity(fields.len());
    for field in fields {
        let column: Vec<Option<&Json>> = values
            .iter()
            .map(|v| match v {
                Some(Json::Object(entries)) => entries
                    .iter()
                    .find(|(k, _)| k == field.name())
                    .map(|(_, value)| value),
                _ => None,
            })
            .collect();
        columns.push(build(field.data_type(), &column)?);
    }
    for v in values {
        if let Some(other) = v.filter(|j| !matches!(j, Json::Object(_) | Json::Null)) {
            return Err(NestedError::expected("an object", other));
        }
    }
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        columns,
        nulls(values),
    )?))
}

/// A map column from objects, keys read back by [`key_value`].
fn map(
    entries: &FieldRef,
    sorted: bool,
    values: &[Option<&Json>],
) -> Result<ArrayRef, NestedError> {
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(NestedError::MapEntries(entries.data_type().clone()));
    };
    let (key_field, value_field) = (&kv[0], &kv[1]);
    let mut offsets = vec![0i32];
    let (mut keys, mut vals) = (Vec::new(), Vec::new());
    for v in values {
        match v {
            None | Some(Json::Null) => {}
            Some(Json::Object(entries)) => {
                for (k, value) in entries {
                    keys.push(key_value(key_field.data_type(), k));
                    vals.push(value);
                }
            }
            Some(other) => return Err(NestedError::expected("an object", other)),
        }
        offsets.push(i32::try_from(keys.len()).map_err(|_| NestedError::MapTooLarge)?);
    }
    let key_refs: Vec<Option<&Json>> = keys.iter().map(Some).collect();
    let val_refs: Vec<Option<&Json>> = vals.iter().map(|v| Some(*v)).collect();
    let columns = vec![
        build(key_field.data_type(), &key_refs)?,
        build(value_field.data_type(), &val_refs)?,
    ];
    let entries_array = StructArray::try_new(kv.clone(), columns, None)?;
    Ok(Arc::new(MapArray::try_new(
        entries.clone(),
        arrow_buffer::OffsetBuffer::new(offsets.into()),
        entries_array,
        nulls(values),
        sorted,
    )?))
}

/// Integers, durations (JSON numbers); strings, decimals, dates, times and timestamps
/// (JSON strings): their text, cast to `data_type`.
fn texts(data_type: &DataType, values: &[Option<&Json>]) -> Result<ArrayRef, NestedError> {
    let texts: Vec<Option<String>> = values
        .iter()
        .map(|v| match v {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(Json::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(NestedError::expected(format!("a {data_type} value"), other)),
        })
        .collect::<Result<_, _>>()?;
    let text = Arc::new(StringArray::from(texts)) as ArrayRef;
    let via = match data_type {
        DataType::Duration(_) => cast(text, &DataType::Int64)?,
        _ => text,
    };
    cast(via, data_type)
}

/// A map key read back from its object key: a number or boolean key from its JSON text
/// (`"1"` → 1), any other key as the string (a string, base64 of a binary key, a date).
fn key_value(data_type: &DataType, key: &str) -> Json {
    let value_type = match data_type {
        DataType::Dictionary(_, v) => v.as_ref(),
        t => t,
    };
    let parsed = value_type.is_integer()
        || value_type.is_floating()
        || matches!(value_type, DataType::Boolean | DataType::Duration(_));
    match parsed.then(|| serde_json::from_str::<Json>(key)) {
        Some(Ok(json)) => json,
        _ => Json::String(key.into()),
    }
}

fn list_parts<O: arrow_array::OffsetSizeTrait>(
    field: &FieldRef,
    values: &[Option<&Json>],
) -> Result<(arrow_buffer::OffsetBuffer<O>, ArrayRef), NestedError> {
    let mut offsets = vec![O::usize_as(0)];
    let mut children = Vec::new();
    for v in values {
        children.extend(items(*v, "a list")?.iter().map(Some));
        offsets.push(O::from_usize(children.len()).ok_or(NestedError::ListTooLarge)?);
    }
    let child = build(field.data_type(), &children)?;
    Ok((arrow_buffer::OffsetBuffer::new(offsets.into()), child))
}

fn cast(array: ArrayRef, to: &DataType) -> Result<ArrayRef, NestedError> {
    if array.data_type() == to {
        return Ok(array);
    }
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(&array, to, &options).map_err(|source| NestedError::Cast {
        to: to.clone(),
        source,
    })
}
