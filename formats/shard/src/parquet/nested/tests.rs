use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Float32Builder, Int64Builder, ListBuilder, MapBuilder, StringBuilder,
};
use arrow_array::{Array, ArrayRef, Int32Array, StringArray, StructArray};
use arrow_schema::{DataType, Field};

use super::*;

fn texts(array: &dyn Array) -> Vec<String> {
    (0..array.len())
        .map(|row| {
            let mut out = Vec::new();
            to_json(array, row, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        })
        .collect()
}

/// Writes every value as JSON, reads them back and checks the array is equal.
fn round_trip(array: &ArrayRef) -> Vec<String> {
    assert!(carries(array.data_type()), "{}", array.data_type());
    let written = texts(array.as_ref());
    let values: Vec<Option<&[u8]>> = written.iter().map(|t| Some(t.as_bytes())).collect();
    let back = from_json(array.data_type(), &values).unwrap();
    assert_eq!(back.as_ref(), array.as_ref(), "{written:?}");
    written
}

#[test]
fn lists_of_strings_tell_every_ambiguous_case_apart() {
    let mut b = ListBuilder::new(StringBuilder::new());
    b.values().append_value("a, b");
    b.append(true);
    b.values().append_value("a");
    b.values().append_value("b");
    b.append(true);
    b.values().append_null();
    b.append(true);
    b.values().append_value("");
    b.append(true);
    b.append(true);
    b.append(false);
    let array: ArrayRef = Arc::new(b.finish());
    assert_eq!(
        round_trip(&array),
        [
            r#"["a, b"]"#,
            r#"["a","b"]"#,
            "[null]",
            r#"[""]"#,
            "[]",
            "null"
        ]
    );
}

#[test]
fn maps_are_objects_and_a_repeated_key_is_refused() {
    let mut b = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    b.keys().append_value("x");
    b.values().append_value(1);
    b.keys().append_value("y");
    b.values().append_null();
    b.append(true).unwrap();
    b.append(true).unwrap();
    b.append(false).unwrap();
    let array: ArrayRef = Arc::new(b.finish());
    assert_eq!(round_trip(&array), [r#"{"x":1,"y":null}"#, "{}", "null"]);

    let mut b = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    for _ in 0..2 {
        b.keys().append_value("k");
        b.values().append_value(1);
    }
    b.append(true).unwrap();
    let err = to_json(&b.finish(), 0, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("key `k` twice"), "{err}");
}

#[test]
fn non_string_map_keys_are_their_json_text() {
    let mut b = MapBuilder::new(None, Int64Builder::new(), BinaryBuilder::new());
    b.keys().append_value(7);
    b.values().append_value(b"\x00\xff");
    b.append(true).unwrap();
    let array: ArrayRef = Arc::new(b.finish());
    assert_eq!(round_trip(&array), [r#"{"7":"AP8="}"#]);
    // A binary key whose base64 reads as a number stays a binary key.
    let mut b = MapBuilder::new(None, BinaryBuilder::new(), Int64Builder::new());
    b.keys().append_value([0xd7, 0x6d, 0xf8]);
    b.values().append_value(1);
    b.append(true).unwrap();
    let array: ArrayRef = Arc::new(b.finish());
    assert_eq!(round_trip(&array), [r#"{"1234":1}"#]);
}

#[test]
fn structs_floats_and_their_nulls() {
    let mut floats = Float32Builder::new();
    for x in [0.1, f32::NAN, f32::INFINITY, -0.0] {
        floats.append_value(x);
    }
    floats.append_null();
    let floats = Arc::new(floats.finish()) as ArrayRef;
    let names = Arc::new(StringArray::from(vec![
        Some("é\"\n"),
        None,
        Some(""),
        Some("z"),
        Some("q"),
    ])) as ArrayRef;
    let array: ArrayRef = Arc::new(
        StructArray::try_new(
            vec![
                Field::new("f", DataType::Float32, true),
                Field::new("s", DataType::Utf8, true),
            ]
            .into(),
            vec![floats, names],
            Some(vec![true, true, true, true, false].into()),
        )
        .unwrap(),
    );
    // NaN compares unequal to itself: compare the text instead of the arrays.
    let written = texts(array.as_ref());
    assert_eq!(
        written,
        [
            r#"{"f":0.10000000149011612,"s":"é\"\n"}"#,
            r#"{"f":"NaN","s":null}"#,
            r#"{"f":"Infinity","s":""}"#,
            r#"{"f":-0.0,"s":"z"}"#,
            "null"
        ]
    );
    let values: Vec<Option<&[u8]>> = written.iter().map(|t| Some(t.as_bytes())).collect();
    let back = from_json(array.data_type(), &values).unwrap();
    assert_eq!(texts(back.as_ref()), written);
}

#[test]
fn what_is_not_nested_or_not_carried_is_told() {
    assert!(!is_nested(&DataType::Utf8));
    assert!(is_nested(&DataType::new_list(DataType::Int32, true)));
    let interval = DataType::Interval(arrow_schema::IntervalUnit::MonthDayNano);
    assert!(!carries(&DataType::new_list(interval, true)));
    let int32 = Arc::new(Int32Array::from(vec![1])) as ArrayRef;
    assert_eq!(texts(int32.as_ref()), ["1"]);
}
