//! MDS column encodings (`../shared/reference/mds.md` §5) and the conversion of a raw
//! input (a file's bytes, a Parquet value) into the bytes a column stores.
//!
//! Pass-through encodings (`bytes`, `str`, `json`, `jpeg`, `png`, `str_int`,
//! `str_float`, `str_decimal`) store the input unchanged after checking it decodes:
//! MDSWriter stores `bytes` objects unchanged whatever the encoding, and the readers
//! parse them the same way. Scalars parse the input as text (`3`, `0.5`). `ndarray`
//! takes a `.npy` file (or, with a static dtype and shape, raw little-endian values).

use std::borrow::Cow;
use std::fmt;

/// Value types of the `ndarray` encoding, with MDS's one-byte codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    U8,
    I8,
    U16,
    I16,
    F16,
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
}

impl DType {
    const ALL: [(DType, &'static str, u8, usize); 11] = [
        (DType::U8, "uint8", 8, 1),
        (DType::I8, "int8", 9, 1),
        (DType::U16, "uint16", 16, 2),
        (DType::I16, "int16", 17, 2),
        (DType::F16, "float16", 18, 2),
        (DType::U32, "uint32", 32, 4),
        (DType::I32, "int32", 33, 4),
        (DType::F32, "float32", 34, 4),
        (DType::U64, "uint64", 64, 8),
        (DType::I64, "int64", 65, 8),
        (DType::F64, "float64", 66, 8),
    ];

    fn row(self) -> (DType, &'static str, u8, usize) {
        *Self::ALL
            .iter()
            .find(|r| r.0 == self)
            .expect("every dtype has a row")
    }

    /// numpy name (`float32`).
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// MDS code.
    pub fn code(self) -> u8 {
        self.row().2
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        self.row().3
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|r| r.1 == name).map(|r| r.0)
    }

    /// From a `.npy` descr (`<f4`, `|u1`); only little-endian or byte-sized types.
    fn from_descr(descr: &str) -> Option<Self> {
        let (order, kind) = descr.split_at_checked(1)?;
        let dtype = match kind {
            "u1" => DType::U8,
            "i1" => DType::I8,
            "u2" => DType::U16,
            "i2" => DType::I16,
            "f2" => DType::F16,
            "u4" => DType::U32,
            "i4" => DType::I32,
            "f4" => DType::F32,
            "u8" => DType::U64,
            "i8" => DType::I64,
            "f8" => DType::F64,
            _ => return None,
        };
        let ok = order == "<" || (dtype.size() == 1 && (order == "|" || order == ">"));
        ok.then_some(dtype)
    }
}

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
    Scalar(DType),
    /// `ndarray[:dtype[:shape]]`.
    NdArray {
        /// Static value type.
        dtype: Option<DType>,
        /// Static shape (needs a static dtype).
        shape: Option<Vec<u64>>,
    },
}

impl Encoding {
    /// Parses an encoding name as MDS spells it (`bytes`, `int`, `ndarray:float32:3,224`).
    pub fn parse(text: &str) -> Result<Self, String> {
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
            _ => DType::from_name(name).map(Encoding::Scalar),
        };
        if let Some(encoding) = simple {
            return if text.contains(':') {
                Err(format!("encoding `{name}` takes no parameters"))
            } else {
                Ok(encoding)
            };
        }
        if name != "ndarray" {
            return Err(match name {
                "pkl" => "`pkl` is unsafe (readers refuse it unless allow_unsafe_types); use bytes or json".into(),
                "pil" | "list[pil]" | "list[jpeg]" | "list[png]" | "jpeg_array" | "jpegarray" => {
                    format!("`{name}` is not supported for raw files; use jpeg, png or bytes")
                }
                _ => format!(
                    "unknown encoding `{name}`; use bytes, str, json, jpeg, png, int, int8..int64, uint8..uint64, float16/32/64, str_int, str_float, str_decimal or ndarray[:DTYPE[:SHAPE]]"
                ),
            });
        }
        let dtype = match parts.next() {
            None | Some("") => None,
            Some(d) => Some(DType::from_name(d).ok_or_else(|| {
                format!("`{d}` is not an ndarray dtype (uint8..uint64, int8..int64, float16/32/64)")
            })?),
        };
        let shape = match parts.next() {
            None => None,
            Some(s) => {
                if dtype.is_none() {
                    return Err("an ndarray shape needs a dtype (ndarray:DTYPE:SHAPE)".into());
                }
                let dims: Result<Vec<u64>, _> =
                    s.split(',').map(|d| d.trim().parse::<u64>()).collect();
                let dims = dims.map_err(|_| {
                    format!("ndarray shape `{s}` is not a comma-separated list of sizes")
                })?;
                if dims.is_empty() || dims.contains(&0) || dims.len() > 63 {
                    return Err(format!(
                        "ndarray shape `{s}` must have 1 to 63 dimensions, each at least 1"
                    ));
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
    pub fn encoded_len(&self, size: u64, head: &[u8]) -> Result<u64, String> {
        match self {
            Encoding::NdArray { dtype, shape } if self.fixed_size().is_none() => {
                let npy = parse_npy(head)?;
                let data = size
                    .checked_sub(npy.header_len as u64)
                    .ok_or("the .npy file is shorter than its header")?;
                Ok(nd_prefix_len(*dtype, shape.as_deref(), &npy.shape) + data)
            }
            _ => Ok(self.fixed_size().unwrap_or(size)),
        }
    }

    /// [`Encoding::encode`] for a value already checked by `encode` (pass-through
    /// encodings are not checked again).
    pub fn convert<'a>(&self, input: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
        match self {
            Encoding::Bytes
            | Encoding::Str
            | Encoding::Json
            | Encoding::Jpeg
            | Encoding::Png
            | Encoding::StrInt
            | Encoding::StrFloat
            | Encoding::StrDecimal => Ok(Cow::Borrowed(input)),
            _ => self.encode(input),
        }
    }

    /// Converts an input value into the bytes the column stores.
    pub fn encode<'a>(&self, input: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
        let text = || {
            std::str::from_utf8(input)
                .map_err(|_| "is not UTF-8 text".to_string())
                .map(str::trim)
        };
        match self {
            Encoding::Bytes => Ok(Cow::Borrowed(input)),
            Encoding::Str => {
                std::str::from_utf8(input).map_err(|e| {
                    format!(
                        "is not valid UTF-8 (byte {}) for a str column",
                        e.valid_up_to()
                    )
                })?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::Json => {
                serde_json::from_slice::<serde::de::IgnoredAny>(input)
                    .map_err(|e| format!("is not valid JSON: {e}"))?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::Jpeg => {
                if !input.starts_with(&[0xff, 0xd8]) {
                    return Err("is not a JPEG (no start-of-image marker)".into());
                }
                Ok(Cow::Borrowed(input))
            }
            Encoding::Png => {
                if !input.starts_with(b"\x89PNG\r\n\x1a\n") {
                    return Err("is not a PNG (bad signature)".into());
                }
                Ok(Cow::Borrowed(input))
            }
            Encoding::StrInt => {
                parse_int(text()?).ok_or("is not an integer")?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::StrFloat => {
                parse_float(text()?).ok_or("is not a number")?;
                Ok(Cow::Borrowed(input))
            }
            Encoding::StrDecimal => {
                if !is_decimal(text()?) {
                    return Err("is not a decimal number".into());
                }
                Ok(Cow::Borrowed(input))
            }
            Encoding::Int => {
                let value = parse_int(text()?).ok_or("is not an integer")?;
                let value = i64::try_from(value)
                    .map_err(|_| "is out of range for int (64-bit)".to_string())?;
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
            Encoding::Json => f.write_str("json"),
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

/// Python `int()` of text: optional sign, digits with single underscores between them.
fn parse_int(text: &str) -> Option<i128> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    clean.parse().ok()
}

/// Python `float()` of text (incl. `nan`, `inf`, underscores between digits).
fn parse_float(text: &str) -> Option<f64> {
    if text.contains("__") || text.starts_with('_') || text.ends_with('_') {
        return None;
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    let bare = lower.trim_start_matches(['+', '-']);
    if matches!(bare, "nan" | "inf" | "infinity") {
        return lower.replace("infinity", "inf").parse().ok();
    }
    if !bare
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    clean.parse().ok()
}

/// `Decimal()` accepts `[sign] digits [. digits] [e [sign] digits]`, NaN and Infinity.
fn is_decimal(text: &str) -> bool {
    let bare = text
        .strip_prefix(['+', '-'])
        .unwrap_or(text)
        .to_ascii_lowercase();
    if matches!(bare.as_str(), "nan" | "snan" | "inf" | "infinity") {
        return true;
    }
    let (mantissa, exponent) = match bare.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (bare.as_str(), None),
    };
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(whole) && digits(frac) && !(whole.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

fn scalar(dtype: DType, text: &str) -> Result<Vec<u8>, String> {
    let range = |v: i128, lo: i128, hi: i128| -> Result<i128, String> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{v} is out of range for {}", dtype.name()))
        }
    };
    let int = || parse_int(text).ok_or_else(|| format!("`{text}` is not an integer"));
    let float = || parse_float(text).ok_or_else(|| format!("`{text}` is not a number"));
    Ok(match dtype {
        DType::U8 => vec![range(int()?, 0, 255)? as u8],
        DType::I8 => vec![range(int()?, -128, 127)? as i8 as u8],
        DType::U16 => (range(int()?, 0, 65535)? as u16).to_le_bytes().to_vec(),
        DType::I16 => (range(int()?, -32768, 32767)? as i16)
            .to_le_bytes()
            .to_vec(),
        DType::U32 => (range(int()?, 0, u32::MAX.into())? as u32)
            .to_le_bytes()
            .to_vec(),
        DType::I32 => (range(int()?, i32::MIN.into(), i32::MAX.into())? as i32)
            .to_le_bytes()
            .to_vec(),
        DType::U64 => (range(int()?, 0, u64::MAX.into())? as u64)
            .to_le_bytes()
            .to_vec(),
        DType::I64 => (range(int()?, i64::MIN.into(), i64::MAX.into())? as i64)
            .to_le_bytes()
            .to_vec(),
        DType::F16 => half::f16::from_f64(float()?).to_le_bytes().to_vec(),
        DType::F32 => (float()? as f32).to_le_bytes().to_vec(),
        DType::F64 => float()?.to_le_bytes().to_vec(),
    })
}

/// A parsed `.npy` header.
struct Npy {
    header_len: usize,
    dtype: DType,
    shape: Vec<u64>,
}

/// Parses the header of a `.npy` file (format versions 1, 2 and 3).
fn parse_npy(bytes: &[u8]) -> Result<Npy, String> {
    if !bytes.starts_with(b"\x93NUMPY") || bytes.len() < 10 {
        return Err("is not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (len_size, start) = match bytes[6] {
        1 => (2, 10),
        2 | 3 => (4, 12),
        v => return Err(format!("is a .npy file of unknown version {v}")),
    };
    if bytes.len() < start {
        return Err("the .npy header is truncated".into());
    }
    let header_size = if len_size == 2 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    let end = start + header_size;
    let header = bytes
        .get(start..end)
        .ok_or("the .npy header is longer than the peeked bytes or the file")?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.strip_prefix('\''))
        .and_then(|r| r.split('\'').next())
        .ok_or("the .npy header has no descr")?;
    let dtype = DType::from_descr(descr).ok_or_else(|| {
        format!("dtype `{descr}` is not supported (little-endian u/i 1-8 bytes, f2/f4/f8)")
    })?;
    let fortran = field("fortran_order").ok_or("the .npy header has no fortran_order")?;
    if fortran.starts_with("True") {
        return Err("is a Fortran-order array; save it in C order".into());
    }
    let shape_text = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or("the .npy header has no shape")?;
    let shape: Result<Vec<u64>, _> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect();
    let shape =
        shape.map_err(|_| format!("the .npy shape `({shape_text})` is not a list of sizes"))?;
    if shape.is_empty() || shape.contains(&0) || shape.len() > 63 {
        return Err(format!(
            "array shape ({shape_text}) cannot be stored: MDS needs 1 to 63 dimensions, none empty"
        ));
    }
    Ok(Npy {
        header_len: end,
        dtype,
        shape,
    })
}

fn shape_code(shape: &[u64]) -> (u8, usize) {
    match shape.iter().max().copied().unwrap_or(0) {
        m if m < 1 << 8 => (0, 1),
        m if m < 1 << 16 => (1, 2),
        m if m < 1 << 32 => (2, 4),
        _ => (3, 8),
    }
}

fn nd_prefix_len(dtype: Option<DType>, shape: Option<&[u64]>, actual: &[u64]) -> u64 {
    let mut len = 0;
    if dtype.is_none() {
        len += 1;
    }
    if shape.is_none() {
        len += 1 + (actual.len() * shape_code(actual).1) as u64;
    }
    len
}

fn ndarray(dtype: Option<DType>, shape: Option<&[u64]>, input: &[u8]) -> Result<Vec<u8>, String> {
    if !input.starts_with(b"\x93NUMPY") {
        let (Some(d), Some(s)) = (dtype, shape) else {
            return Err("is not a .npy file (raw values need a static dtype and shape: ndarray:DTYPE:SHAPE)".into());
        };
        let want = s.iter().product::<u64>() * d.size() as u64;
        if input.len() as u64 != want {
            return Err(format!(
                "holds {} bytes of raw values, the static shape needs {want}",
                input.len()
            ));
        }
        return Ok(input.to_vec());
    }
    let npy = parse_npy(input)?;
    if let Some(d) = dtype
        && d != npy.dtype
    {
        return Err(format!(
            "is a {} array, the column holds {}",
            npy.dtype.name(),
            d.name()
        ));
    }
    if let Some(s) = shape
        && s != npy.shape.as_slice()
    {
        return Err(format!(
            "has shape {:?}, the column's static shape is {s:?}",
            npy.shape
        ));
    }
    let data = &input[npy.header_len..];
    let want = npy.shape.iter().product::<u64>() * npy.dtype.size() as u64;
    if data.len() as u64 != want {
        return Err(format!(
            "holds {} bytes of values, its shape needs {want}",
            data.len()
        ));
    }
    let mut out = Vec::with_capacity(data.len() + 2 + 8 * npy.shape.len());
    if dtype.is_none() {
        out.push(npy.dtype.code());
    }
    if shape.is_none() {
        let (code, width) = shape_code(&npy.shape);
        out.push(((npy.shape.len() as u8) << 2) | code);
        for &dim in &npy.shape {
            out.extend_from_slice(&dim.to_le_bytes()[..width]);
        }
    }
    out.extend_from_slice(data);
    Ok(out)
}

#[cfg(test)]
mod tests {
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
        assert!(Encoding::parse("pkl").unwrap_err().contains("unsafe"));
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
                .contains("int32 array")
        );
        assert!(
            Encoding::parse("ndarray:uint8:3")
                .unwrap()
                .encode(&[1, 2])
                .unwrap_err()
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
        assert!(Encoding::Str.encode(b"\xff").unwrap_err().contains("UTF-8"));
    }
}
