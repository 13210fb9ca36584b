//! Tensor element types and the NaN/Inf scan (`--scan-values`), bit patterns per dtype
//! as the reference notes list them (bf16 and the fp8 variants included).

/// Element type of a tensor, from a safetensors dtype string or a torch storage/dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorDtype {
    Bool,
    U8,
    I8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    Bf16,
    F32,
    F64,
    /// Complex of two f32.
    C64,
    /// Complex of two f64.
    C128,
    F8E4M3,
    F8E5M2,
    F8E4M3Fnuz,
    F8E5M2Fnuz,
    F8E8M0,
    F4,
    F6E2M3,
    F6E3M2,
    /// Quantized and other integer-coded types of this many bits (no NaN, no Inf).
    Other(u8),
}

impl TensorDtype {
    /// Bits per element.
    pub fn bits(self) -> u64 {
        use TensorDtype::*;
        match self {
            F4 => 4,
            F6E2M3 | F6E3M2 => 6,
            Bool | U8 | I8 | F8E4M3 | F8E5M2 | F8E4M3Fnuz | F8E5M2Fnuz | F8E8M0 => 8,
            I16 | U16 | F16 | Bf16 => 16,
            I32 | U32 | F32 => 32,
            I64 | U64 | F64 | C64 => 64,
            C128 => 128,
            Other(bits) => u64::from(bits),
        }
    }

    /// Bytes per element (sub-byte types round up).
    pub fn size(self) -> u64 {
        self.bits().div_ceil(8)
    }

    /// Floating point with a zero of all-zero bits: a run of zero bytes inside such a
    /// tensor is suspicious. (E8M0 scale bytes of 0 mean 2^-127, not zero; integers
    /// and masks are often zero legitimately.)
    pub fn is_float(self) -> bool {
        use TensorDtype::*;
        matches!(
            self,
            F16 | Bf16 | F32 | F64 | C64 | C128 | F8E4M3 | F8E5M2 | F8E4M3Fnuz | F8E5M2Fnuz
        )
    }

    /// The safetensors spelling (`F32`, `BF16`, `F8_E4M3`; `X<bits>` for the integer-coded
    /// types safetensors has no name for).
    pub fn safetensors_name(self) -> String {
        use TensorDtype::*;
        match self {
            Bool => "BOOL".into(),
            F8E4M3 => "F8_E4M3".into(),
            F8E5M2 => "F8_E5M2".into(),
            F8E4M3Fnuz => "F8_E4M3FNUZ".into(),
            F8E5M2Fnuz => "F8_E5M2FNUZ".into(),
            F8E8M0 => "F8_E8M0".into(),
            F4 => "F4".into(),
            F6E2M3 => "F6_E2M3".into(),
            F6E3M2 => "F6_E3M2".into(),
            Other(bits) => format!("X{bits}"),
            other => format!("{other:?}").to_uppercase(),
        }
    }

    /// A safetensors dtype string (`F32`, `BF16`, `F8_E4M3`, ...).
    pub fn from_safetensors(name: &str) -> Option<Self> {
        use TensorDtype::*;
        Some(match name {
            "BOOL" => Bool,
            "U8" => U8,
            "I8" => I8,
            "I16" => I16,
            "U16" => U16,
            "I32" => I32,
            "U32" => U32,
            "I64" => I64,
            "U64" => U64,
            "F16" => F16,
            "BF16" => Bf16,
            "F32" => F32,
            "F64" => F64,
            "C64" => C64,
            "F8_E4M3" => F8E4M3,
            "F8_E5M2" => F8E5M2,
            "F8_E4M3FNUZ" => F8E4M3Fnuz,
            "F8_E5M2FNUZ" => F8E5M2Fnuz,
            "F8_E8M0" => F8E8M0,
            "F4" => F4,
            "F6_E2M3" => F6E2M3,
            "F6_E3M2" => F6E3M2,
            _ => return None,
        })
    }

    /// A legacy typed storage class name (`FloatStorage`, `BFloat16Storage`, ...).
    pub fn from_torch_storage(name: &str) -> Option<Self> {
        use TensorDtype::*;
        Some(match name {
            "DoubleStorage" => F64,
            "FloatStorage" => F32,
            "HalfStorage" => F16,
            "BFloat16Storage" => Bf16,
            "LongStorage" => I64,
            "IntStorage" => I32,
            "ShortStorage" => I16,
            "CharStorage" => I8,
            "ByteStorage" => U8,
            "BoolStorage" => Bool,
            "ComplexDoubleStorage" => C128,
            "ComplexFloatStorage" => C64,
            "QInt8Storage" | "QUInt8Storage" | "QUInt4x2Storage" | "QUInt2x4Storage" => Other(8),
            "QInt32Storage" => Other(32),
            // torch.storage.UntypedStorage: numel counts bytes.
            "UntypedStorage" => U8,
            _ => return None,
        })
    }

    /// A torch dtype name (`float32`, `bfloat16`, `float8_e4m3fn`, ...).
    pub fn from_torch_dtype(name: &str) -> Option<Self> {
        use TensorDtype::*;
        Some(match name {
            "float64" | "double" => F64,
            "float32" | "float" => F32,
            "float16" | "half" => F16,
            "bfloat16" => Bf16,
            "int64" | "long" => I64,
            "int32" | "int" => I32,
            "int16" | "short" => I16,
            "int8" => I8,
            "uint8" => U8,
            "uint16" => U16,
            "uint32" => U32,
            "uint64" => U64,
            "bool" => Bool,
            "complex64" | "cfloat" => C64,
            "complex128" | "cdouble" => C128,
            "float8_e4m3fn" => F8E4M3,
            "float8_e5m2" => F8E5M2,
            "float8_e4m3fnuz" => F8E4M3Fnuz,
            "float8_e5m2fnuz" => F8E5M2Fnuz,
            "float8_e8m0fnu" => F8E8M0,
            "float4_e2m1fn_x2" => Other(8),
            "qint8" | "quint8" | "quint4x2" | "quint2x4" => Other(8),
            "qint32" => Other(32),
            _ => return None,
        })
    }
}

/// NaN and Inf counts of one tensor's bytes, fed in pieces of any size.
#[derive(Clone, Debug)]
pub struct ValueScan {
    dtype: TensorDtype,
    carry: [u8; 16],
    carry_len: usize,
    /// NaN elements seen.
    pub nan: u64,
    /// ±Inf elements seen.
    pub inf: u64,
    /// Elements seen.
    pub count: u64,
}

impl ValueScan {
    /// A scan for `dtype`, or `None` when the type has no NaN or Inf.
    pub fn new(dtype: TensorDtype) -> Option<Self> {
        dtype.is_float().then_some(Self {
            dtype,
            carry: [0; 16],
            carry_len: 0,
            nan: 0,
            inf: 0,
            count: 0,
        })
    }

    /// The next bytes of the tensor.
    pub fn update(&mut self, mut data: &[u8]) {
        let size = self.dtype.size() as usize;
        if self.carry_len > 0 {
            let take = (size - self.carry_len).min(data.len());
            self.carry[self.carry_len..self.carry_len + take].copy_from_slice(&data[..take]);
            self.carry_len += take;
            data = &data[take..];
            if self.carry_len < size {
                return;
            }
            let carry = self.carry;
            self.elements(&carry[..size]);
            self.carry_len = 0;
        }
        let whole = data.len() / size * size;
        self.elements(&data[..whole]);
        let rest = &data[whole..];
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carry_len = rest.len();
    }

    fn elements(&mut self, data: &[u8]) {
        use TensorDtype::*;
        let (nan, inf) = match self.dtype {
            F32 | C64 => count_ieee(data.chunks_exact(4), |c| {
                let b = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                (b >> 23 & 0xff == 0xff, b & 0x7f_ffff != 0)
            }),
            F64 | C128 => count_ieee(data.chunks_exact(8), |c| {
                let b = u64::from_le_bytes(c.try_into().expect("8 bytes"));
                (b >> 52 & 0x7ff == 0x7ff, b & 0xf_ffff_ffff_ffff != 0)
            }),
            F16 => count_ieee(data.chunks_exact(2), |c| {
                let b = u16::from_le_bytes([c[0], c[1]]);
                (b >> 10 & 0x1f == 0x1f, b & 0x3ff != 0)
            }),
            Bf16 => count_ieee(data.chunks_exact(2), |c| {
                let b = u16::from_le_bytes([c[0], c[1]]);
                (b >> 7 & 0xff == 0xff, b & 0x7f != 0)
            }),
            F8E5M2 => count_ieee(data.chunks_exact(1), |c| {
                (c[0] >> 2 & 0x1f == 0x1f, c[0] & 3 != 0)
            }),
            F8E4M3 => (data.iter().filter(|&&b| b & 0x7f == 0x7f).count() as u64, 0),
            F8E4M3Fnuz | F8E5M2Fnuz => (data.iter().filter(|&&b| b == 0x80).count() as u64, 0),
            _ => (0, 0),
        };
        let per = if matches!(self.dtype, C64 | C128) {
            2
        } else {
            1
        };
        self.nan += nan;
        self.inf += inf;
        self.count += data.len() as u64 / self.dtype.size() * per;
    }
}

/// Counts (NaN, Inf) over elements where `parts` gives (exponent all ones, mantissa non-zero).
fn count_ieee<'a>(
    elements: impl Iterator<Item = &'a [u8]>,
    parts: impl Fn(&[u8]) -> (bool, bool),
) -> (u64, u64) {
    let (mut nan, mut inf) = (0u64, 0u64);
    for e in elements {
        let (special, mantissa) = parts(e);
        nan += u64::from(special && mantissa);
        inf += u64::from(special && !mantissa);
    }
    (nan, inf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(dtype: TensorDtype, bytes: &[u8], piece: usize) -> (u64, u64, u64) {
        let mut s = ValueScan::new(dtype).unwrap();
        for chunk in bytes.chunks(piece) {
            s.update(chunk);
        }
        (s.nan, s.inf, s.count)
    }

    #[test]
    fn nan_and_inf_per_dtype_whatever_the_piece_size() {
        let f32s: Vec<u8> = [1.0f32, f32::NAN, f32::INFINITY, -f32::INFINITY, 0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let bf16: Vec<u8> = [0x3f80u16, 0x7fc0, 0x7f80, 0xff80, 0x0000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let f16: Vec<u8> = [0x3c00u16, 0x7e00, 0x7c00, 0xfc00, 0x0000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        for piece in [1, 3, 7, 64] {
            assert_eq!(scan(TensorDtype::F32, &f32s, piece), (1, 2, 5));
            assert_eq!(scan(TensorDtype::Bf16, &bf16, piece), (1, 2, 5));
            assert_eq!(scan(TensorDtype::F16, &f16, piece), (1, 2, 5));
        }
        assert_eq!(
            scan(TensorDtype::F8E5M2, &[0x3c, 0x7d, 0x7c, 0xfc, 0xff], 2),
            (2, 2, 5)
        );
        assert_eq!(
            scan(TensorDtype::F8E4M3, &[0x38, 0x7f, 0xff, 0x7e], 1),
            (2, 0, 4)
        );
        assert_eq!(
            scan(TensorDtype::F8E4M3Fnuz, &[0x80, 0x7f, 0xff], 1),
            (1, 0, 3)
        );
        assert!(ValueScan::new(TensorDtype::I64).is_none());
        assert!(ValueScan::new(TensorDtype::F8E8M0).is_none());
    }

    #[test]
    fn names_map_to_sizes() {
        assert_eq!(TensorDtype::from_safetensors("BF16").unwrap().size(), 2);
        assert_eq!(TensorDtype::from_safetensors("F128"), None);
        assert_eq!(
            TensorDtype::from_torch_storage("LongStorage"),
            Some(TensorDtype::I64)
        );
        assert_eq!(
            TensorDtype::from_torch_dtype("float8_e4m3fn"),
            Some(TensorDtype::F8E4M3)
        );
        assert_eq!(TensorDtype::F4.bits(), 4);
    }
}
