//! A Parquet file for the parquet crate's readers that treats its end as an error.
//!
//! The parquet crate reads page headers as a stream, and its Thrift decoder skips a
//! field's bytes by copying them to a sink: at the end of the file that copy returns
//! early without an error. A damaged header that declares a list of two billion
//! doubles then loops two billion times, each a `read` of zero bytes (found by fuzzing:
//! one 10 KiB file held `verify` for minutes). [`StrictFile`] answers a read past its end
//! with `UnexpectedEof`, which ends that loop at once with an error, and never reads a
//! range the file does not hold into memory.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parquet::errors::{ParquetError, Result};
use parquet::file::reader::{ChunkReader, Length};
use shardsmith_store::{LocalFile, RangeRead};

/// A Parquet file whose end is an error for the reader (see the module docs). Cloning
/// shares the input.
#[derive(Clone)]
pub struct StrictFile {
    input: Arc<dyn RangeRead>,
    len: u64,
    /// How the file is encrypted (Parquet modular encryption), if it is.
    encryption: Encryption,
}

/// Parquet modular encryption as a file's end tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Encryption {
    /// Not encrypted.
    None,
    /// An encrypted footer (the file ends with `PARE`).
    Footer,
    /// A plaintext footer that declares encrypted columns.
    Columns,
}

impl StrictFile {
    /// Opens the local file `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        Self::new(Arc::new(LocalFile::new(File::open(path)?)?))
    }

    /// Wraps an input opened for random access (`InputSource::open_ranged`) and walks
    /// its footer ([`super::footer::check`]): a footer no well-formed file has is
    /// `InvalidData` before the parquet crate sees it. A file too short for a footer, or
    /// without the magic, is left to the parquet crate's own error.
    pub fn new(input: Arc<dyn RangeRead>) -> io::Result<Self> {
        let len = input.len();
        let mut strict = Self {
            input,
            len,
            encryption: Encryption::None,
        };
        if len >= 12 {
            let mut tail = [0u8; 8];
            strict.input.read_exact_at(len - 8, &mut tail)?;
            let footer_len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4")));
            if &tail[4..] == b"PARE" {
                strict.encryption = Encryption::Footer;
            } else if &tail[4..] == b"PAR1" && footer_len + 12 <= len {
                let mut footer = vec![0; footer_len as usize];
                strict
                    .input
                    .read_exact_at(len - 8 - footer_len, &mut footer)?;
                super::footer::check(&footer).map_err(|why| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the Parquet footer is malformed: {why}"),
                    )
                })?;
                if super::footer::is_encrypted(&footer) {
                    strict.encryption = Encryption::Columns;
                }
            }
        }
        Ok(strict)
    }

    /// How the file is encrypted, if it is.
    pub(super) fn encryption(&self) -> Encryption {
        self.encryption
    }
}

impl StrictFile {
    /// Up to `most` bytes from `start` (fewer at the end of the file).
    pub(super) fn read_upto(&self, start: u64, most: usize) -> io::Result<Vec<u8>> {
        let n = usize::try_from(self.len.saturating_sub(start))
            .unwrap_or(usize::MAX)
            .min(most);
        let mut buffer = vec![0; n];
        self.input.read_exact_at(start, &mut buffer)?;
        Ok(buffer)
    }
}

impl Length for StrictFile {
    fn len(&self) -> u64 {
        self.len
    }
}

/// Reads an input from a position on; asking for bytes at its end is `UnexpectedEof`,
/// not `Ok(0)`.
pub struct EndIsError {
    input: Arc<dyn RangeRead>,
    at: u64,
}

impl Read for EndIsError {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.input.read_at(self.at, buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the Parquet data ends inside a page header",
            ));
        }
        self.at += n as u64;
        Ok(n)
    }
}

impl ChunkReader for StrictFile {
    type T = BufReader<EndIsError>;

    fn get_read(&self, start: u64) -> Result<Self::T> {
        if start > self.len {
            return Err(ParquetError::EOF(format!(
                "a read starts at byte {start}, past the end of the file ({} bytes)",
                self.len
            )));
        }
        Ok(BufReader::new(EndIsError {
            input: self.input.clone(),
            at: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        let end = start.checked_add(length as u64).filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(ParquetError::EOF(format!(
                "{length} bytes at byte {start} are past the end of the file ({} bytes)",
                self.len
            )));
        }
        let mut buffer = vec![0; length];
        self.input.read_exact_at(start, &mut buffer)?;
        Ok(buffer.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"0123456789").unwrap();
        let file = StrictFile::open(&path).unwrap();
        assert_eq!(&file.get_bytes(2, 3).unwrap()[..], b"234");
        assert!(file.get_bytes(8, 3).is_err());
        assert!(file.get_bytes(u64::MAX, 3).is_err());
        assert!(file.get_read(11).is_err());
        let mut rest = Vec::new();
        let mut read = file.get_read(7).unwrap();
        let err = read.read_to_end(&mut rest).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(rest, b"789");
        // What the Thrift decoder does to skip bytes: copy them to a sink.
        let mut read = file.get_read(9).unwrap();
        assert!(io::copy(&mut (&mut read).take(1 << 40), &mut io::sink()).is_err());
    }
}
