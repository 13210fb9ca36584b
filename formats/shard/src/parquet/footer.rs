//! A walk over a Parquet footer's Thrift bytes (compact protocol) before the parquet
//! crate decodes it, to refuse footers whose declared sizes no well-formed footer can
//! have.
//!
//! In the compact protocol every element of a list or set takes at least one byte, and
//! every map entry at least two, so a list that declares more elements than bytes remain
//! is certainly damaged. The parquet crate finds that out only element by element, and
//! for a list of booleans it consumes no byte per element when it skips one: a 2 KiB
//! footer declaring a two-billion-element list kept it busy for most of a second (found
//! by fuzzing). This walk is linear in the footer's length, needs no allocation and
//! checks nothing else: what it accepts, the parquet crate still decodes and judges.

/// Why Thrift bytes (a footer, a page header) cannot be walked; each names its byte
/// offset inside those bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ThriftError {
    /// The bytes end inside a value (they may be a prefix of the whole).
    #[error("the footer ends inside a value at byte {at}")]
    EndsInside { at: usize },
    /// A value declares more bytes than remain.
    #[error("a value at byte {at} declares {len} bytes, {remain} remain in the footer")]
    LongValue {
        at: usize,
        len: usize,
        remain: usize,
    },
    /// A varint of more than 10 bytes.
    #[error("a varint at byte {at} is longer than 10 bytes")]
    LongVarint { at: usize },
    /// A field id that does not fit an i16.
    #[error("a field id out of range at byte {at}")]
    FieldId { at: usize },
    /// A list, set or map that declares more elements than could fit.
    #[error(
        "a {what} at byte {at} declares {count} elements, only {remain} bytes remain in the footer"
    )]
    TooMany {
        what: &'static str,
        at: usize,
        count: u64,
        remain: usize,
    },
    /// Values nested deeper than [`MAX_DEPTH`].
    #[error("values nest deeper than {MAX_DEPTH} at byte {at}")]
    TooDeep { at: usize },
    /// A type code the compact protocol does not have.
    #[error("unknown Thrift type {kind} at byte {at}")]
    UnknownType { kind: u8, at: usize },
}

/// Why a footer was refused, with the byte offset inside the footer.
pub(crate) fn check(footer: &[u8]) -> Result<(), ThriftError> {
    Walk::new(footer).value(STRUCT, 0)
}

/// True when the footer (a FileMetaData, checked by [`check`]) has an
/// `encryption_algorithm` (field 8): a file in plaintext-footer mode whose columns are
/// encrypted.
pub(crate) fn is_encrypted(footer: &[u8]) -> bool {
    let mut walk = Walk::new(footer);
    let mut last = 0;
    while let Ok(Some((id, kind))) = walk.field(last) {
        if id == 8 && kind == STRUCT {
            return true;
        }
        if !matches!(kind, BOOL_TRUE | BOOL_FALSE) && walk.value(kind, 1).is_err() {
            return false;
        }
        last = id;
    }
    false
}

const MAX_DEPTH: u32 = 64;
pub(super) const BOOL_TRUE: u8 = 1;
pub(super) const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
pub(super) const I16: u8 = 4;
pub(super) const I32: u8 = 5;
pub(super) const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
pub(super) const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// A walk over compact-protocol bytes (a footer, a page header): linear in their
/// length, no allocation. Values it does not read are skipped with [`Walk::value`].
pub(super) struct Walk<'a> {
    bytes: &'a [u8],
    /// The position of the next byte.
    pub(super) at: usize,
    /// Set when a value needed more bytes than there are (the bytes may be a prefix).
    pub(super) short: bool,
}

impl<'a> Walk<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            short: false,
        }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    pub(super) fn byte(&mut self) -> Result<u8, ThriftError> {
        let Some(&b) = self.bytes.get(self.at) else {
            self.short = true;
            return Err(ThriftError::EndsInside { at: self.at });
        };
        self.at += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), ThriftError> {
        if n > self.remaining() {
            self.short = true;
            return Err(ThriftError::LongValue {
                at: self.at,
                len: n,
                remain: self.remaining(),
            });
        }
        self.at += n;
        Ok(())
    }

    pub(super) fn varint(&mut self) -> Result<u64, ThriftError> {
        let start = self.at;
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ThriftError::LongVarint { at: start })
    }

    /// A zigzag-encoded integer (i16, i32, i64).
    pub(super) fn int(&mut self) -> Result<i64, ThriftError> {
        let n = self.varint()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    /// The header of the next field of a struct: `None` at its end, else the field's id
    /// (from the last one's, `last`) and its type.
    pub(super) fn field(&mut self, last: i16) -> Result<Option<(i16, u8)>, ThriftError> {
        let header = self.byte()?;
        if header == 0 {
            return Ok(None);
        }
        let id = match header >> 4 {
            0 => i16::try_from(self.int()?).map_err(|_| ThriftError::FieldId {
                at: self.at.saturating_sub(1),
            })?,
            delta => last.wrapping_add(i16::from(delta)),
        };
        Ok(Some((id, header & 0x0f)))
    }

    /// Checks that `count` elements of at least `each` bytes fit in what remains.
    fn fits(
        &mut self,
        count: u64,
        each: u64,
        what: &'static str,
        start: usize,
    ) -> Result<(), ThriftError> {
        if count.saturating_mul(each) > self.remaining() as u64 {
            self.short = true;
            return Err(ThriftError::TooMany {
                what,
                at: start,
                count,
                remain: self.remaining(),
            });
        }
        Ok(())
    }

    /// Skips one value of type `kind` (a struct field of type `BOOL_*` has no bytes:
    /// callers skip those themselves).
    pub(super) fn value(&mut self, kind: u8, depth: u32) -> Result<(), ThriftError> {
        if depth > MAX_DEPTH {
            return Err(ThriftError::TooDeep { at: self.at });
        }
        match kind {
            BOOL_TRUE | BOOL_FALSE | BYTE => self.byte().map(drop),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.skip(8),
            UUID => self.skip(16),
            BINARY => {
                let len = self.varint()?;
                self.skip(usize::try_from(len).unwrap_or(usize::MAX))
            }
            LIST | SET => {
                let start = self.at;
                let header = self.byte()?;
                let count = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.fits(count, 1, "list", start)?;
                let element = header & 0x0f;
                for _ in 0..count {
                    self.value(element, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let start = self.at;
                let count = self.varint()?;
                if count == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                self.fits(count, 2, "map", start)?;
                for _ in 0..count {
                    self.value(types >> 4, depth + 1)?;
                    self.value(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            STRUCT => loop {
                let header = self.byte()?;
                if header == 0 {
                    return Ok(());
                }
                if header >> 4 == 0 {
                    self.varint()?; // a field id that is not a small delta
                }
                match header & 0x0f {
                    // A boolean field carries its value in the type nibble.
                    BOOL_TRUE | BOOL_FALSE => {}
                    kind => self.value(kind, depth + 1)?,
                }
            },
            other => Err(ThriftError::UnknownType {
                kind: other,
                at: self.at.saturating_sub(1),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_values_pass() {
        // struct { 1: i32 = 1, 2: list<bool> [true, false], 3: binary "ab",
        //          4: map<i32,i32> {1: 2}, 5: bool true, 20: struct {} }
        let footer = [
            0x15, 0x02, // field 1, i32, zigzag(1)
            0x19, 0x21, 0x01, 0x02, // field 2, list of 2 bools
            0x18, 0x02, b'a', b'b', // field 3, binary
            0x1b, 0x01, 0x55, 0x02, 0x04, // field 4, map of 1 i32 -> i32
            0x11, // field 5, bool true in the type nibble
            0x0c, 0x28, 0x00, // field 20 (long form), empty struct
            0x00,
        ];
        check(&footer).unwrap();
    }

    #[test]
    fn a_list_longer_than_the_footer_is_refused() {
        // field 1: list<bool> of 2^31 - 1 elements, then nothing.
        let footer = [0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00];
        let err = check(&footer).unwrap_err().to_string();
        assert!(err.contains("declares 2147483647 elements"), "{err}");
    }

    #[test]
    fn damaged_values_are_refused() {
        for (footer, why) in [
            (&[0x18, 0x10, b'a'][..], "declares 16 bytes"),
            (&[0x1b, 0x05, 0x55][..], "declares 5 elements"),
            (&[0x1e][..], "unknown Thrift type 14"),
            (&[0x15][..], "ends inside a value"),
            (
                &[
                    0x15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                ][..],
                "longer than 10 bytes",
            ),
        ] {
            let err = check(footer).unwrap_err().to_string();
            assert!(err.contains(why), "{footer:?}: {err}");
        }
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 70).collect();
        assert!(
            check(&deep)
                .unwrap_err()
                .to_string()
                .contains("nest deeper")
        );
    }

    fn footer_of(bytes: &[u8]) -> &[u8] {
        let end = bytes.len() - 8;
        let len = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap()) as usize;
        &bytes[end - len..end]
    }

    #[test]
    fn real_footers_pass() {
        use std::sync::Arc;

        use arrow_array::{
            ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
        };
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::{EnabledStatistics, WriterProperties};

        let columns: Vec<(&str, ArrayRef)> = vec![
            ("key", Arc::new(StringArray::from(vec!["a", "b", "c"]))),
            (
                "jpg",
                Arc::new(BinaryArray::from(vec![&b"x"[..], b"", b"yz"])),
            ),
            (
                "n",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            ),
            ("f", Arc::new(Float64Array::from(vec![0.5, -1.0, 2.0]))),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_max_row_group_row_count(Some(2))
            .build();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
            "written_by".into(),
            "a test".to_string(),
        ));
        writer.close().unwrap();
        check(footer_of(&bytes)).unwrap();
        check(footer_of(include_bytes!(
            "testdata/fuzz-empty-bit-run.parquet"
        )))
        .unwrap();
    }
}
