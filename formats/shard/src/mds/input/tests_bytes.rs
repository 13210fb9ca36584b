//! MDS input over hand-built shards: encodings our writer does not produce (numpy
//! scalars, dynamic ndarrays, `pil`, `pkl`, lists) and damaged records.

use std::path::Path;

use serde_json::json;

use super::tests::{open, read_all};
use super::values::{ColumnKind, scalar_text};
use crate::columns::ArrayDtype;
use crate::columns::Encoding;
use crate::sample::SampleSource;

/// A column: name, MDS encoding, fixed size.
type Col<'a> = (&'a str, &'a str, Option<u64>);

/// Writes `shard.00000.mds` (columns in the order given, which must be sorted) and its
/// `index.json` into `dir`.
fn dataset(dir: &Path, columns: &[Col<'_>], records: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut body = Vec::new();
    let mut ends = Vec::new();
    for record in records {
        for ((_, _, fixed), value) in columns.iter().zip(record) {
            if fixed.is_none() {
                body.extend_from_slice(&(value.len() as u32).to_le_bytes());
            }
        }
        for value in record {
            body.extend_from_slice(value);
        }
        ends.push(body.len());
    }
    let config = b"{}";
    let start = 4 + 4 * (records.len() + 1) + config.len();
    let mut shard = (records.len() as u32).to_le_bytes().to_vec();
    shard.extend_from_slice(&(start as u32).to_le_bytes());
    for end in ends {
        shard.extend_from_slice(&((start + end) as u32).to_le_bytes());
    }
    shard.extend_from_slice(config);
    shard.extend_from_slice(&body);
    std::fs::write(dir.join("shard.00000.mds"), &shard).unwrap();
    let index = json!({"version": 2, "shards": [{
        "column_encodings": columns.iter().map(|c| c.1).collect::<Vec<_>>(),
        "column_names": columns.iter().map(|c| c.0).collect::<Vec<_>>(),
        "column_sizes": columns.iter().map(|c| c.2).collect::<Vec<_>>(),
        "compression": null, "format": "mds", "hashes": [],
        "raw_data": {"basename": "shard.00000.mds", "bytes": shard.len(), "hashes": {}},
        "samples": records.len(), "size_limit": 67108864, "version": 2, "zip_data": null,
    }]});
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    shard
}

fn field<'a>(sample: &'a (String, Vec<(String, Vec<u8>)>), name: &str) -> &'a [u8] {
    &sample.1.iter().find(|f| f.0 == name).unwrap().1
}

#[test]
fn scalars_read_as_text_our_writer_turns_back_into_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let columns = [
        ("A8", "int8", Some(1)),
        ("b64", "uint64", Some(8)),
        ("c", "int", Some(8)),
        ("d16", "float16", Some(2)),
        ("e32", "float32", Some(4)),
        ("f64", "float64", Some(8)),
        ("key", "int", Some(8)),
    ];
    let rows: [(i8, u64, i64, f32, f32, f64); 4] = [
        (-1, u64::MAX, i64::MIN, 0.1, 1e-5, 0.1 + 0.2),
        (127, 0, 5, 65504.0, 3.0e38, 1e300),
        (0, 1, -5, -0.0, f32::INFINITY, 1.5e-7),
        (-128, 7, 0, 6.0e-8, 0.25, 12345.678),
    ];
    let records: Vec<Vec<Vec<u8>>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                r.0.to_le_bytes().to_vec(),
                r.1.to_le_bytes().to_vec(),
                r.2.to_le_bytes().to_vec(),
                half::f16::from_f32(r.3).to_le_bytes().to_vec(),
                r.4.to_le_bytes().to_vec(),
                r.5.to_le_bytes().to_vec(),
                (i as i64 * 10).to_le_bytes().to_vec(),
            ]
        })
        .collect();
    dataset(dir.path(), &columns, &records);
    let dataset = open(dir.path(), "key", None).unwrap();
    let (read, _) = read_all(&dataset);
    let text: Vec<Vec<String>> = read
        .iter()
        .map(|s| {
            let mut row = vec![s.0.clone()];
            row.extend(s.1.iter().map(|f| String::from_utf8(f.1.clone()).unwrap()));
            row
        })
        .collect();
    assert_eq!(
        text,
        [
            [
                "0",
                "-1",
                "18446744073709551615",
                "-9223372036854775808",
                "0.1",
                "1e-5",
                "0.30000000000000004"
            ],
            ["10", "127", "0", "5", "65500", "3e38", "1e300"],
            ["20", "0", "1", "-5", "-0", "inf", "1.5e-7"],
            ["30", "-128", "7", "0", "6e-8", "0.25", "12345.678"],
        ]
    );
    let encodings = dataset.suggested_encodings();
    for (sample, record) in read.iter().zip(&records) {
        for ((name, value), stored) in sample.1.iter().zip(&record[..6]) {
            let back = encodings[name].encode(value).unwrap();
            assert_eq!(&*back, &stored[..], "{name} {value:?}");
        }
    }
    assert_eq!(
        encodings.keys().collect::<Vec<_>>(),
        ["a8", "b64", "c", "d16", "e32", "f64"]
    );
}

#[test]
fn every_float16_and_many_float32_and_float64_round_trip_through_our_writer() {
    let check = |dtype: ArrayDtype, bytes: &[u8], nan: bool| {
        let text = scalar_text(dtype, bytes);
        let back = Encoding::Scalar(dtype).encode(text.as_bytes()).unwrap();
        if nan {
            assert_eq!(text, "NaN");
        } else {
            assert_eq!(&*back, bytes, "{dtype:?} {text}");
        }
    };
    for bits in 0..=u16::MAX {
        let v = half::f16::from_bits(bits);
        check(ArrayDtype::F16, &bits.to_le_bytes(), v.is_nan());
    }
    let mut x = 1u64;
    for _ in 0..200_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let b32 = (x >> 32) as u32;
        check(
            ArrayDtype::F32,
            &b32.to_le_bytes(),
            f32::from_bits(b32).is_nan(),
        );
        check(
            ArrayDtype::F64,
            &x.to_le_bytes(),
            f64::from_bits(x).is_nan(),
        );
    }
}

#[test]
fn ndarrays_read_as_npy_files_our_writer_stores_identically() {
    let dir = tempfile::tempdir().unwrap();
    let ones: Vec<u8> = (0..6).flat_map(|_| 1f32.to_le_bytes()).collect();
    let mut dynamic = vec![0x22, 0x08, 0x02, 0x03];
    dynamic.extend_from_slice(&ones);
    // int32, one dim of 300: the shape needs u16 (code 1).
    let mut wide = vec![(1 << 2) | 1, 0x2c, 0x01];
    wide.extend((0..300i32).flat_map(i32::to_le_bytes));
    let fixed: Vec<u8> = [1u16, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let columns = [
        ("a", "ndarray", None),
        ("b", "ndarray:int32", None),
        ("c", "ndarray:uint16:3", Some(6)),
    ];
    dataset(
        dir.path(),
        &columns,
        &[vec![dynamic.clone(), wide.clone(), fixed.clone()]],
    );
    let dataset = open(dir.path(), "key", None).unwrap();
    let (read, _) = read_all(&dataset);
    let a = field(&read[0], "a");
    assert!(a.starts_with(b"\x93NUMPY\x01\x00"));
    assert_eq!(a.len() % 64, 24);
    let header = std::str::from_utf8(&a[10..a.len() - 24]).unwrap();
    assert_eq!(
        header.trim_end(),
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    );
    let encodings = dataset.suggested_encodings();
    for (name, stored) in [("a", &dynamic), ("b", &wide), ("c", &fixed)] {
        let back = encodings[name].encode(field(&read[0], name)).unwrap();
        assert_eq!(&*back, &stored[..], "{name}");
    }
    assert!(
        std::str::from_utf8(&field(&read[0], "b")[10..70])
            .unwrap()
            .contains("'<i4'")
    );

    // Values that disagree with the shape are a damaged shard.
    dataset_of_bad_array(dir.path());
}

fn dataset_of_bad_array(dir: &Path) {
    let mut short = vec![0x22, 0x08, 0x02, 0x03];
    short.extend_from_slice(&[0; 20]);
    dataset(dir, &[("a", "ndarray", None)], &[vec![short]]);
    let e = open(dir, "key", None).unwrap().samples().unwrap_err();
    assert!(
        e.to_string().ends_with(
            "sample 0 (bytes 14..42): column `a` holds 20 bytes of ndarray values, its shape [2, 3] of float32 needs 24"
        ),
        "{e}"
    );
}

fn pil(width: u32, height: u32, mode: &str, pixels: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for n in [width, height, mode.len() as u32] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(mode.as_bytes());
    out.extend_from_slice(pixels);
    out
}

#[test]
fn pil_images_read_as_lossless_pngs_and_other_modes_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let rgb = [255, 0, 0, 0, 128, 255];
    let gray16: Vec<u8> = [1u16, 65535, 300, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let records = vec![
        vec![b"a".to_vec(), pil(2, 1, "RGB", &rgb)],
        vec![b"b".to_vec(), pil(2, 2, "I;16", &gray16)],
        vec![b"c".to_vec(), pil(1, 1, "CMYK", &[1, 2, 3, 4])],
    ];
    dataset(
        dir.path(),
        &[("key", "str", None), ("x", "pil", None)],
        &records,
    );
    let dataset = open(dir.path(), "key", None).unwrap();
    let (read, skipped) = read_all(&dataset);
    assert_eq!(read.len(), 2);
    let png = image::load_from_memory(field(&read[0], "x")).unwrap();
    assert_eq!(png.to_rgb8().into_raw(), rgb);
    let png = image::load_from_memory(field(&read[1], "x")).unwrap();
    let values: Vec<u16> = png.to_luma16().into_raw();
    assert_eq!(values, [1, 65535, 300, 0]);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].path, "shard.00000.mds#sample=2");
    assert!(
        skipped[0].reason.contains("mode `CMYK`"),
        "{}",
        skipped[0].reason
    );
    assert_eq!(dataset.suggested_encodings()["x"], Encoding::Png);
}

#[test]
fn pickles_and_image_lists_pass_through_as_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let columns = [
        ("j", "jpeg_array", None),
        ("k", "str", None),
        ("l", "list[jpeg]", None),
        ("p", "pkl", None),
    ];
    let record = vec![
        vec![1, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xd8],
        "ключ".as_bytes().to_vec(),
        vec![0, 0, 0, 0, 0, 0, 0, 0],
        b"\x80\x04K\x01.".to_vec(),
    ];
    dataset(dir.path(), &columns, std::slice::from_ref(&record));
    let dataset = open(dir.path(), "k", None).unwrap();
    let (read, _) = read_all(&dataset);
    assert_eq!(read[0].0, "ключ");
    assert_eq!(field(&read[0], "j"), &record[0][..]);
    assert_eq!(field(&read[0], "l"), &record[2][..]);
    assert_eq!(field(&read[0], "p"), &record[3][..]);
    let encodings: Vec<String> = dataset
        .suggested_encodings()
        .values()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(encodings, ["bytes", "bytes", "bytes"]);
    assert_eq!(
        ColumnKind::parse("jpegarray").unwrap().to_string(),
        "jpegarray"
    );
}

#[test]
fn damaged_records_and_offsets_are_named_with_the_sample_and_byte() {
    let dir = tempfile::tempdir().unwrap();
    let columns = [("key", "str", None), ("x", "bytes", None)];
    let shard = dataset(
        dir.path(),
        &columns,
        &[vec![b"a".to_vec(), b"xyz".to_vec()]],
    );
    // Claim 100 bytes for `x` in a record that holds 3.
    let mut bad = shard.clone();
    let at = bad.len() - 3 - 1 - 4;
    bad[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
    std::fs::write(dir.path().join("shard.00000.mds"), &bad).unwrap();
    let e = open(dir.path(), "key", None)
        .unwrap()
        .samples()
        .unwrap_err();
    assert!(
        e.to_string().ends_with(
            "shard.00000.mds` sample 0 (bytes 14..26): column `x` (100 bytes at byte 9 of the record) runs past the record's end (12 bytes)"
        ),
        "{e}"
    );
    // Offsets out of order.
    let mut bad = shard.clone();
    bad[8..12].copy_from_slice(&13u32.to_le_bytes());
    std::fs::write(dir.path().join("shard.00000.mds"), &bad).unwrap();
    let e = open(dir.path(), "key", None)
        .unwrap()
        .samples()
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("sample 0 ends at byte 13 (offset at byte 8), before it starts (byte 14)"),
        "{e}"
    );
    // A key that is not text is left out.
    dataset(
        dir.path(),
        &[("key", "bytes", None)],
        &[vec![vec![0xff]], vec![b"ok".to_vec()]],
    );
    let (read, skipped) = read_all(&open(dir.path(), "key", None).unwrap());
    assert_eq!(read.len(), 1);
    assert_eq!(skipped[0].reason, "the key column `key` is not UTF-8 text");
}
