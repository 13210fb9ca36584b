use super::*;

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({shape}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn names_round_trip() {
    for name in [
        "bytes",
        "str",
        "json",
        "int",
        "uint16",
        "float16",
        "str_decimal",
        "ndarray",
        "ndarray:int32",
        "ndarray:float32:3,224,224",
    ] {
        assert_eq!(Encoding::parse(name).unwrap().to_string(), name);
    }
    assert!(
        Encoding::parse("pkl")
            .unwrap_err()
            .to_string()
            .contains("unsafe")
    );
    assert!(Encoding::parse("ndarray::3").is_err());
    assert!(Encoding::parse("int:3").is_err());
    assert_eq!(
        Encoding::parse("ndarray:float32:3,224,224")
            .unwrap()
            .fixed_size(),
        Some(602_112)
    );
}

#[test]
fn ndarray_matches_the_reference_example() {
    // mds.md §5.1: np.ones((2,3), float32) as `ndarray` is 22 08 02 03 then 24 bytes.
    let ones: Vec<u8> = (0..6).flat_map(|_| 1f32.to_le_bytes()).collect();
    let file = npy("<f4", "2, 3", &ones);
    let enc = Encoding::parse("ndarray").unwrap();
    let out = enc.encode(&file).unwrap();
    assert_eq!(&out[..4], &[0x22, 0x08, 0x02, 0x03]);
    assert_eq!(out.len(), 28);
    assert_eq!(enc.encoded_len(file.len() as u64, &file).unwrap(), 28);
    let wide: Vec<u8> = vec![0; 300 * 2 * 4];
    let file = npy("<i4", "300, 2", &wide);
    let enc = Encoding::parse("ndarray:int32").unwrap();
    let out = enc.encode(&file).unwrap();
    assert_eq!(&out[..5], &[(2 << 2) | 1, 44, 1, 2, 0]);
    assert_eq!(
        enc.encoded_len(file.len() as u64, &file).unwrap(),
        out.len() as u64
    );
    assert!(
        Encoding::parse("ndarray:float32")
            .unwrap()
            .encode(&file)
            .unwrap_err()
            .to_string()
            .contains("int32 array")
    );
    assert!(
        Encoding::parse("ndarray:uint8:3")
            .unwrap()
            .encode(&[1, 2])
            .unwrap_err()
            .to_string()
            .contains("needs 3")
    );
}

#[test]
fn scalars_parse_text_like_python() {
    assert_eq!(
        Encoding::Int.encode(b" 42\n").unwrap().as_ref(),
        &42i64.to_le_bytes()
    );
    assert_eq!(
        Encoding::Int.encode(b"-1_000").unwrap().as_ref(),
        &(-1000i64).to_le_bytes()
    );
    assert!(Encoding::Int.encode(b"1.5").is_err());
    assert_eq!(
        Encoding::parse("uint8")
            .unwrap()
            .encode(b"255")
            .unwrap()
            .as_ref(),
        &[255]
    );
    assert!(
        Encoding::parse("uint8")
            .unwrap()
            .encode(b"256")
            .unwrap_err()
            .to_string()
            .contains("out of range")
    );
    assert_eq!(
        Encoding::parse("float16")
            .unwrap()
            .encode(b"1.0")
            .unwrap()
            .as_ref(),
        &[0x00, 0x3c]
    );
    assert_eq!(
        Encoding::parse("float32")
            .unwrap()
            .encode(b"0.5")
            .unwrap()
            .as_ref(),
        &0.5f32.to_le_bytes()
    );
    assert!(Encoding::StrFloat.encode(b"nan").is_ok());
    assert!(Encoding::StrFloat.encode(b"1e-5").is_ok());
    assert!(Encoding::StrFloat.encode(b"abc").is_err());
    assert!(Encoding::StrDecimal.encode(b"-12.50e+3").is_ok());
    assert!(Encoding::StrDecimal.encode(b"1.2.3").is_err());
    assert!(
        Encoding::Str
            .encode(b"\xff")
            .unwrap_err()
            .to_string()
            .contains("UTF-8")
    );
}

/// Found by fuzzing (`npy`): a `.npy` shape whose byte size overflows u64 made the size
/// check multiply with overflow (a panic in debug builds, a wrong size in release).
#[test]
fn npy_shape_larger_than_any_file_is_refused() {
    let file = b"\x93NUMPY\x01\0\x83\0{\x02\0t\0\0\0{'d'    \x0a\0\0\0\0\0\0tra<c8n_o\x01\0v\0{'derPY\x01\0v\0{'descr': '<i8', 'fortran_order': Fal!!!a!!!!!!! 'shape': (00744073709551615,0005878,0000000000000000000000000000000000002, 3\0rder'\0\x05\0\0tr\0\0\0";
    let enc = Encoding::parse("ndarray").unwrap();
    let err = enc.encode(file).unwrap_err().to_string();
    assert!(err.contains("larger than any file"), "{err}");
    let head = &file[..file.len().min(enc.peek_len())];
    assert!(enc.encoded_len(file.len() as u64, head).is_err());
    let wide = npy("<f8", "4294967296, 4294967296", &[]);
    assert!(
        enc.encode(&wide)
            .unwrap_err()
            .to_string()
            .contains("larger than any file")
    );
    assert!(
        Encoding::parse("ndarray:uint64:4294967296,4294967296")
            .unwrap_err()
            .to_string()
            .contains("larger than any value")
    );
}
