//! An input source that counts the bytes read and remembers the files opened: what
//! `cat -v` reports of the reads it took to find a sample.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use shardsmith_store::{InputListing, InputSource, RangeRead, ReadError};

/// An input source that counts the bytes read and remembers the files opened.
pub struct Counting {
    inner: Arc<dyn InputSource>,
    read: Arc<AtomicU64>,
    opened: Mutex<Vec<String>>,
}

impl Counting {
    pub(super) fn new(inner: Arc<dyn InputSource>) -> Self {
        Self {
            inner,
            read: Arc::new(AtomicU64::new(0)),
            opened: Mutex::new(Vec::new()),
        }
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Files opened so far, in the order first opened.
    pub fn opened(&self) -> Vec<String> {
        self.opened.lock().expect("not poisoned").clone()
    }

    fn note(&self, rel: &str) {
        let mut opened = self.opened.lock().expect("not poisoned");
        if !opened.iter().any(|r| r == rel) {
            opened.push(rel.to_string());
        }
    }
}

struct CountingRead {
    inner: Box<dyn Read + Send>,
    read: Arc<AtomicU64>,
}

impl Read for CountingRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

struct CountingRange {
    inner: Arc<dyn RangeRead>,
    read: Arc<AtomicU64>,
}

impl RangeRead for CountingRange {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read_at(offset, buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl InputSource for Counting {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn display(&self, rel: &str) -> String {
        self.inner.display(rel)
    }

    fn list(&self) -> shardsmith_store::Result<InputListing> {
        self.inner.list()
    }

    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        self.note(rel);
        let before = buf.len();
        let result = self.inner.read_into(rel, size, buf);
        self.read
            .fetch_add((buf.len() - before) as u64, Ordering::Relaxed);
        result
    }

    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
        self.note(rel);
        let inner = self.inner.open(rel)?;
        Ok(Box::new(CountingRead {
            inner,
            read: self.read.clone(),
        }))
    }

    fn open_at(&self, rel: &str, offset: u64) -> Result<Box<dyn Read + Send>, ReadError> {
        self.note(rel);
        let inner = self.inner.open_at(rel, offset)?;
        Ok(Box::new(CountingRead {
            inner,
            read: self.read.clone(),
        }))
    }

    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
        self.note(rel);
        let inner = self.inner.open_ranged(rel)?;
        Ok(Arc::new(CountingRange {
            inner,
            read: self.read.clone(),
        }))
    }

    fn every_file(&self, test: &dyn Fn(&str) -> Option<bool>) -> bool {
        self.inner.every_file(test)
    }
}
