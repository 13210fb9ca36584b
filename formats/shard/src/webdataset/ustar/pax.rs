//! PAX extended headers (`x`, `X`, `g`): `LEN key=value\n` records, parsed here once
//! for `verify` and for the input walk, the way Python's `tarfile` parses and applies
//! them.
//!
//! A value is any bytes up to its record's last byte, NUL and newline included (GNU tar
//! `--xattrs` writes `SCHILY.xattr.*` values that end in NUL; `tarfile` keeps the NUL
//! in the value). A NUL where a record would start ends the records (the padding after
//! them). Anything else that is not a record is an error: recent `tarfile` versions stop
//! reading the archive there, older ones drop the header's remaining records.

use std::collections::HashMap;

/// Why a PAX extended header cannot be read as `tarfile` reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PaxError {
    #[error(
        "its record at byte {at} of the header is not `LENGTH key=value\\n`: Python's tarfile stops reading the archive there (older versions drop the records from there on)"
    )]
    Malformed { at: usize },
    #[error("its `{key}` record `{value}` is not a number")]
    NotANumber { key: String, value: String },
}

/// One record: its keyword and value, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// The records of one extended header's data, in order.
pub(crate) fn records(data: &[u8]) -> Result<Vec<Record<'_>>, PaxError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() && data[pos] != 0 {
        let bad = PaxError::Malformed { at: pos };
        let rest = &data[pos..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 20 || rest.get(digits) != Some(&b' ') {
            return Err(bad);
        }
        let len = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&len| len >= 5 && len >= digits + 3 && len <= rest.len())
            .ok_or(bad.clone())?;
        if rest[len - 1] != b'\n' {
            return Err(bad);
        }
        let body = &rest[digits + 1..len - 1];
        let eq = body.iter().position(|&b| b == b'=').filter(|&eq| eq > 0);
        let Some(eq) = eq else {
            return Err(bad);
        };
        out.push(Record {
            key: &body[..eq],
            value: &body[eq + 1..],
        });
        pos += len;
    }
    Ok(out)
}

/// Sparse maps carried by PAX records (GNU tar `--sparse --format=pax`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PaxSparse {
    /// Format 0.0 (`GNU.sparse.offset` and `GNU.sparse.numbytes` records) or 0.1
    /// (`GNU.sparse.map`): `(offset, length)` pairs, in record order.
    Records {
        version: &'static str,
        map: Vec<(u64, u64)>,
    },
    /// Format 1.0: the map is text at the start of the member's data.
    InData,
}

/// What the extended headers before a member say about it, as `tarfile` applies them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PaxInfo {
    /// Its name: `path` (trailing `/` removed) or `GNU.sparse.name`.
    pub name: Option<Vec<u8>>,
    /// The `size` record: the bytes stored after its header, which place the next one.
    pub stored: Option<u64>,
    /// Its size as `tarfile` reports and reads it: `size`, `GNU.sparse.size` or
    /// `GNU.sparse.realsize`.
    pub size: Option<u64>,
    /// Its sparse map, when the records make it a GNU sparse file.
    pub sparse: Option<PaxSparse>,
}

fn decimal(key: &[u8], value: &[u8]) -> Result<u64, PaxError> {
    std::str::from_utf8(value)
        .ok()
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| PaxError::NotANumber {
            key: String::from_utf8_lossy(key).into_owned(),
            value: String::from_utf8_lossy(value).into_owned(),
        })
}

impl PaxInfo {
    /// Parses one extended header's data.
    pub fn parse(data: &[u8]) -> Result<Self, PaxError> {
        let records = records(data)?;
        // `tarfile` collects the records in a dict: a keyword keeps the place of its first
        // record and the value of its last; the fields are then applied in that order.
        let mut dict: Vec<Record<'_>> = Vec::new();
        let mut index: HashMap<&[u8], usize> = HashMap::new();
        for record in &records {
            match index.get(record.key) {
                Some(&i) => dict[i].value = record.value,
                None => {
                    index.insert(record.key, dict.len());
                    dict.push(*record);
                }
            }
        }
        let get = |key: &[u8]| index.get(key).map(|&i| dict[i].value);
        let mut info = PaxInfo::default();
        for Record { key, value } in &dict {
            match *key {
                b"path" => {
                    let end = value.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
                    info.name = Some(value[..end].to_vec());
                }
                b"GNU.sparse.name" => info.name = Some(value.to_vec()),
                b"size" => {
                    let size = decimal(key, value)?;
                    info.stored = Some(size);
                    info.size = Some(size);
                }
                b"GNU.sparse.size" | b"GNU.sparse.realsize" => {
                    info.size = Some(decimal(key, value)?);
                }
                _ => {}
            }
        }
        info.sparse = if let Some(map) = get(b"GNU.sparse.map") {
            let mut numbers = Vec::new();
            for n in map.split(|&b| b == b',') {
                numbers.push(decimal(b"GNU.sparse.map", n)?);
            }
            // Pairs, as `zip` makes them: an odd last number is dropped.
            let map = numbers.chunks_exact(2).map(|p| (p[0], p[1])).collect();
            Some(PaxSparse::Records {
                version: "0.1",
                map,
            })
        } else if get(b"GNU.sparse.size").is_some() {
            // Every record of the two keywords, in order, paired as `zip` pairs them;
            // `tarfile` finds them with `\d+` and passes over other values.
            let digits =
                |r: &&Record<'_>| !r.value.is_empty() && r.value.iter().all(u8::is_ascii_digit);
            let of = |key: &[u8]| -> Result<Vec<u64>, PaxError> {
                records
                    .iter()
                    .filter(|r| r.key == key)
                    .filter(digits)
                    .map(|r| decimal(r.key, r.value))
                    .collect()
            };
            let offsets = of(b"GNU.sparse.offset")?;
            let lengths = of(b"GNU.sparse.numbytes")?;
            Some(PaxSparse::Records {
                version: "0.0",
                map: offsets.into_iter().zip(lengths).collect(),
            })
        } else if get(b"GNU.sparse.major") == Some(b"1") && get(b"GNU.sparse.minor") == Some(b"0") {
            Some(PaxSparse::InData)
        } else {
            None
        };
        Ok(info)
    }

    /// These records followed by those of a later extended header before the same
    /// member: `tarfile` applies the earlier header last, so its fields win.
    pub fn then(self, later: PaxInfo) -> PaxInfo {
        PaxInfo {
            name: self.name.or(later.name),
            stored: self.stored.or(later.stored),
            size: self.size.or(later.size),
            sparse: self.sparse.or(later.sparse),
        }
    }
}
