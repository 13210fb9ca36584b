//! `.npy` files as inputs of `ndarray` columns: the header parsed (versions 1–3,
//! little-endian, C order) and the values re-framed as MDS stores them (§5.1 of
//! `../shared/reference/mds.md`: optional dtype code, optional shape, then the values).

use super::dtype::ArrayDtype;
use super::error::{NpyError, ValueError};

/// A parsed `.npy` header.
pub(super) struct Npy {
    pub(super) header_len: usize,
    pub(super) dtype: ArrayDtype,
    pub(super) shape: Vec<u64>,
    /// Bytes of the values the shape and dtype describe.
    pub(super) data_len: u64,
}

/// Parses the header of a `.npy` file (format versions 1, 2 and 3).
pub(super) fn parse_npy(bytes: &[u8]) -> Result<Npy, NpyError> {
    if !bytes.starts_with(b"\x93NUMPY") || bytes.len() < 10 {
        return Err(NpyError::Magic);
    }
    let (len_size, start) = match bytes[6] {
        1 => (2, 10),
        2 | 3 => (4, 12),
        v => return Err(NpyError::Version(v)),
    };
    if bytes.len() < start {
        return Err(NpyError::Truncated);
    }
    let header_size = if len_size == 2 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    let end = start + header_size;
    let header = bytes.get(start..end).ok_or(NpyError::Long)?;
    let header = std::str::from_utf8(header).map_err(|_| NpyError::NotText)?;
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.strip_prefix('\''))
        .and_then(|r| r.split('\'').next())
        .ok_or(NpyError::NoDescr)?;
    let dtype = ArrayDtype::from_descr(descr).ok_or_else(|| NpyError::Descr(descr.to_string()))?;
    let fortran = field("fortran_order").ok_or(NpyError::NoFortranOrder)?;
    if fortran.starts_with("True") {
        return Err(NpyError::FortranOrder);
    }
    let shape_text = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or(NpyError::NoShape)?;
    let shape: Result<Vec<u64>, _> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect();
    let shape = shape.map_err(|_| NpyError::ShapeSyntax(shape_text.to_string()))?;
    if shape.is_empty() || shape.contains(&0) || shape.len() > 63 {
        return Err(NpyError::ShapeDims(shape_text.to_string()));
    }
    // A hostile shape must not overflow the size computed from it.
    let data_len = shape
        .iter()
        .try_fold(dtype.size() as u64, |n, &dim| n.checked_mul(dim))
        .ok_or_else(|| NpyError::ShapeTooLarge(shape_text.to_string()))?;
    Ok(Npy {
        header_len: end,
        dtype,
        shape,
        data_len,
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

pub(super) fn nd_prefix_len(
    dtype: Option<ArrayDtype>,
    shape: Option<&[u64]>,
    actual: &[u64],
) -> u64 {
    let mut len = 0;
    if dtype.is_none() {
        len += 1;
    }
    if shape.is_none() {
        len += 1 + (actual.len() * shape_code(actual).1) as u64;
    }
    len
}

pub(super) fn ndarray(
    dtype: Option<ArrayDtype>,
    shape: Option<&[u64]>,
    input: &[u8],
) -> Result<Vec<u8>, ValueError> {
    if !input.starts_with(b"\x93NUMPY") {
        let (Some(d), Some(s)) = (dtype, shape) else {
            return Err(ValueError::RawWithoutShape);
        };
        let want = s.iter().product::<u64>() * d.size() as u64;
        if input.len() as u64 != want {
            return Err(ValueError::RawSize {
                len: input.len(),
                want,
            });
        }
        return Ok(input.to_vec());
    }
    let npy = parse_npy(input)?;
    if let Some(d) = dtype
        && d != npy.dtype
    {
        return Err(ValueError::Dtype {
            found: npy.dtype.name(),
            column: d.name(),
        });
    }
    if let Some(s) = shape
        && s != npy.shape.as_slice()
    {
        return Err(ValueError::Shape {
            found: npy.shape,
            column: s.to_vec(),
        });
    }
    let data = &input[npy.header_len..];
    let want = npy.data_len;
    if data.len() as u64 != want {
        return Err(ValueError::DataSize {
            len: data.len(),
            want,
        });
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
