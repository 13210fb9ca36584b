//! A walk of a Parquet footer's Thrift before the parquet crate decodes it.
//!
//! The crate's decoder reserves every list from its declared element count before
//! reading an element (`Vec::with_capacity(n)`, apache/arrow-rs#9874): a footer of a
//! few bytes declaring 10^8 schema elements makes it allocate gigabytes. This walk reads
//! the footer's compact-protocol structure without decoding it and refuses a list, set,
//! map or string that claims more elements or bytes than remain in the footer (every
//! element takes at least one byte), so what the crate then reserves is bounded by the
//! footer's real size.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Deepest nesting of structs and containers walked (real footers nest a few levels).
const MAX_DEPTH: usize = 64;

/// Checks the footer of the Parquet file `file`: its length field, then its Thrift.
pub(crate) fn check_file(file: &mut File) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot be read: {e}");
    let len = file.metadata().map_err(io)?.len();
    if len < 12 {
        return Err(format!("{len} bytes cannot hold a Parquet footer"));
    }
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::Start(len - 8)).map_err(io)?;
    file.read_exact(&mut tail).map_err(io)?;
    if &tail[4..] != b"PAR1" {
        return Err("does not end with the Parquet magic `PAR1`".into());
    }
    let footer_len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    if footer_len + 12 > len {
        return Err(format!(
            "footer length {footer_len} is larger than the file ({len} bytes)"
        ));
    }
    let mut footer = vec![0u8; footer_len as usize];
    file.seek(SeekFrom::Start(len - 8 - footer_len))
        .map_err(io)?;
    file.read_exact(&mut footer).map_err(io)?;
    check(&footer)
}

/// Walks the Thrift compact-protocol struct `footer` (a `FileMetaData`).
pub(crate) fn check(footer: &[u8]) -> Result<(), String> {
    let mut walk = Walk { buf: footer, at: 0 };
    walk.structure(0).map_err(|why| {
        format!(
            "footer is damaged at byte {} of {}: {why}",
            walk.at,
            footer.len()
        )
    })
}

struct Walk<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.buf.get(self.at).ok_or("it ends inside a value")?;
        self.at += 1;
        Ok(b)
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "a value of {n} bytes where {} remain",
                self.remaining()
            ));
        }
        self.at += n as usize;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }

    /// A container's element count, which cannot exceed the bytes left.
    fn count(&mut self, n: u64, what: &str) -> Result<u64, String> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "a {what} of {n} elements where {} bytes remain",
                self.remaining()
            ));
        }
        Ok(n)
    }

    fn structure(&mut self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("structs nested too deeply".into());
        }
        loop {
            let header = self.byte()?;
            if header == 0 {
                return Ok(());
            }
            if header >> 4 == 0 {
                self.varint()?; // the field id, when not a delta
            }
            match header & 0x0f {
                1 | 2 => {} // a boolean field holds its value in its type
                kind => self.value(kind, depth + 1)?,
            }
        }
    }

    fn value(&mut self, kind: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("values nested too deeply".into());
        }
        match kind {
            1..=3 => self.skip(1), // a boolean (in a container) or a byte
            4..=6 => self.varint().map(|_| ()),
            7 => self.skip(8),
            8 => {
                let n = self.varint()?;
                self.skip(n)
            }
            9 | 10 => {
                let header = self.byte()?;
                let n = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                let n = self.count(n, "list")?;
                for _ in 0..n {
                    self.value(header & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            11 => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                let n = self.count(n, "map")?;
                for _ in 0..n {
                    self.value(types >> 4, depth + 1)?;
                    self.value(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            12 => self.structure(depth + 1),
            other => Err(format!("unknown Thrift type {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (`parquet`): a footer whose schema list declares 143 million
    /// elements made the parquet crate reserve 21 GB before decoding one.
    #[test]
    fn a_list_longer_than_the_footer_is_refused() {
        // FileMetaData { 1: version i32 = 1, 2: schema list<struct> of 0x0fffffff }
        let footer = b"\x15\x02\x19\xfc\xff\xff\xff\x7f\x00\x00";
        let err = check(footer).unwrap_err();
        assert!(err.contains("a list of 268435455 elements"), "{err}");
    }

    #[test]
    fn a_footer_the_parquet_crate_writes_passes() {
        use std::sync::Arc;
        let keys: arrow_array::ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a", "b"]));
        let batch = arrow_array::RecordBatch::try_from_iter([("key", keys)]).unwrap();
        let mut bytes = Vec::new();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.parquet");
        std::fs::write(&path, &bytes).unwrap();
        check_file(&mut File::open(&path).unwrap()).unwrap();
    }
}
