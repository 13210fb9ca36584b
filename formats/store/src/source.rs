//! Where `pack` and `tokenize` read their inputs from ([`InputSource`]): listing,
//! whole reads, streams from any offset, and random access ([`RangeRead`]) for Parquet.
//! The local file system implements it in [`crate::local`]; an object store can too,
//! without any format noticing.

use std::io::{self, Read};
use std::sync::Arc;

use shardsmith_manifest::Skipped;

use crate::Result;

/// One raw input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedFile {
    /// Path relative to the input root, `/`-separated, UTF-8.
    pub rel: String,
    /// Size when listed.
    pub size: u64,
}

/// The files an input offers, and those it had to leave out.
#[derive(Clone, Debug, Default)]
pub struct InputListing {
    /// Files, in a deterministic order.
    pub files: Vec<ListedFile>,
    /// Entries left out, with the reason.
    pub skipped: Vec<Skipped>,
}

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The file cannot be opened or read (permissions, vanished, I/O error): the sample
    /// is skipped, or the run fails under `--strict`.
    Unreadable(String),
    /// The file was listed but is gone: the input is being modified.
    Vanished,
    /// The file's size differs from the listing: the input is being modified.
    Changed {
        /// Bytes actually available (a lower bound when the file grew).
        read: u64,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Unreadable(why) => f.write_str(why),
            ReadError::Vanished => f.write_str("it disappeared since it was listed"),
            ReadError::Changed { read } => {
                write!(f, "it changed since it was listed ({read} bytes now)")
            }
        }
    }
}

impl std::error::Error for ReadError {}

impl From<ReadError> for io::Error {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Vanished => io::Error::new(io::ErrorKind::NotFound, e),
            other => io::Error::other(other),
        }
    }
}

/// Random access to one input: what a Parquet reader needs (its footer at the end, then
/// column chunks anywhere). A local file answers with positioned reads; an object store
/// would answer with ranged GETs.
pub trait RangeRead: Send + Sync {
    /// Size in bytes, taken when opened.
    fn len(&self) -> u64;
    /// True for an empty input.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads up to `buf.len()` bytes at `offset`; `Ok(0)` at the end.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_exact_at(&self, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(offset, buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    offset += n as u64;
                    buf = &mut buf[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Files being fetched ahead, handed out in the order they were asked for.
pub trait Prefetched: Send {
    /// Appends the next file to `buf` when it is `rel`; `None` when the reads departed
    /// from the announced order (the caller then reads `rel` itself).
    fn take(&mut self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Option<Result<(), ReadError>>;
}

/// A source of raw input files.
pub trait InputSource: Send + Sync {
    /// Human description (the root path or URL) for messages.
    fn describe(&self) -> String;
    /// How input `rel` is shown in messages (its full path or URL).
    fn display(&self, rel: &str) -> String {
        format!("{}/{rel}", self.describe())
    }
    /// Lists every input file. Only a failure to list the root is an error.
    fn list(&self) -> Result<InputListing>;
    /// Appends exactly `size` bytes of `rel` to `buf`, checking the size did not change.
    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError>;
    /// Opens `rel` for streaming (large files).
    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError>;
    /// Opens `rel` for streaming from byte `offset` on (a resumed run). The default
    /// reads and drops the bytes before `offset`; sources that can seek do.
    fn open_at(&self, rel: &str, offset: u64) -> Result<Box<dyn Read + Send>, ReadError> {
        let mut reader = self.open(rel)?;
        let skipped = io::copy(&mut (&mut reader).take(offset), &mut io::sink())
            .map_err(|e| ReadError::Unreadable(e.to_string()))?;
        if skipped < offset {
            return Err(ReadError::Changed { read: skipped });
        }
        Ok(reader)
    }
    /// Opens `rel` for random access (Parquet).
    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError>;
    /// True when [`InputSource::prefetch`] fetches files ahead (an object store): its
    /// readers are best read in the order they were given.
    fn fetches_ahead(&self) -> bool {
        false
    }
    /// Starts fetching `files` in this order, ahead of the [`read_into`](Self::read_into)
    /// calls that will ask for them: an object store hides its latency behind many
    /// requests at once. A local disk needs none and returns `None`, as is the default.
    fn prefetch(&self, _files: Vec<ListedFile>) -> Option<Box<dyn Prefetched + '_>> {
        None
    }
    /// True when the source holds at least one file `test` accepts and none it refuses,
    /// deciding at the first refused file without listing the rest (content sniffing of
    /// a whole input: a tree of millions of raw files is told from a Parquet dataset at
    /// its first file). `test` returns `Some(true)` to accept, `Some(false)` to refuse
    /// and `None` to ignore a file. An input that cannot be listed is `false`.
    fn every_file(&self, test: &dyn Fn(&str) -> Option<bool>) -> bool {
        let Ok(listing) = self.list() else {
            return false;
        };
        let mut seen = false;
        for file in &listing.files {
            match test(&file.rel) {
                Some(true) => seen = true,
                Some(false) => return false,
                None => {}
            }
        }
        seen
    }
}
