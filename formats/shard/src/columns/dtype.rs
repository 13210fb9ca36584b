//! Value types of the `ndarray` column encoding.

/// Value types of the `ndarray` encoding, with MDS's one-byte codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayDtype {
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

impl ArrayDtype {
    const ALL: [(ArrayDtype, &'static str, u8, usize); 11] = [
        (ArrayDtype::U8, "uint8", 8, 1),
        (ArrayDtype::I8, "int8", 9, 1),
        (ArrayDtype::U16, "uint16", 16, 2),
        (ArrayDtype::I16, "int16", 17, 2),
        (ArrayDtype::F16, "float16", 18, 2),
        (ArrayDtype::U32, "uint32", 32, 4),
        (ArrayDtype::I32, "int32", 33, 4),
        (ArrayDtype::F32, "float32", 34, 4),
        (ArrayDtype::U64, "uint64", 64, 8),
        (ArrayDtype::I64, "int64", 65, 8),
        (ArrayDtype::F64, "float64", 66, 8),
    ];

    fn row(self) -> (ArrayDtype, &'static str, u8, usize) {
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

    pub(super) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|r| r.1 == name).map(|r| r.0)
    }

    /// From a `.npy` descr (`<f4`, `|u1`); only little-endian or byte-sized types.
    pub(super) fn from_descr(descr: &str) -> Option<Self> {
        let (order, kind) = descr.split_at_checked(1)?;
        let dtype = match kind {
            "u1" => ArrayDtype::U8,
            "i1" => ArrayDtype::I8,
            "u2" => ArrayDtype::U16,
            "i2" => ArrayDtype::I16,
            "f2" => ArrayDtype::F16,
            "u4" => ArrayDtype::U32,
            "i4" => ArrayDtype::I32,
            "f4" => ArrayDtype::F32,
            "u8" => ArrayDtype::U64,
            "i8" => ArrayDtype::I64,
            "f8" => ArrayDtype::F64,
            _ => return None,
        };
        let ok = order == "<" || (dtype.size() == 1 && (order == "|" || order == ">"));
        ok.then_some(dtype)
    }
}
