//! The content digest of a sample, which `pack --dedup` and `stats` compare: 128-bit
//! XXH3 of each field's bytes, then of the fields' names, sizes and digests in order.
//! The key is not part of it. A digest per field lets a field be hashed while it streams
//! into a shard, whatever order an encoder reads the fields in.
//!
//! XXH3 is fast (several GB/s per core, well below the cost of reading the bytes) but
//! not collision resistant against crafted input; `pack --dedup` therefore compares the
//! bytes of two samples whose digests match before it leaves one out.

use std::io::{self, Read};

use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// A sample's content digest.
pub type Digest = u128;

/// The digest of one field's bytes.
pub fn field_digest(bytes: &[u8]) -> Digest {
    xxh3_128(bytes)
}

/// The digest of a sample from its fields' names, sizes and [`field_digest`]s, in order.
pub fn sample_digest<'a>(fields: impl IntoIterator<Item = (&'a str, u64, Digest)>) -> Digest {
    let mut hasher = Xxh3::new();
    for (name, size, digest) in fields {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(&size.to_le_bytes());
        hasher.update(&digest.to_le_bytes());
    }
    hasher.digest128()
}

/// The digest of a sample held in memory: `(name, bytes)` per field.
pub fn memory_digest<'a>(fields: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Digest {
    sample_digest(
        fields
            .into_iter()
            .map(|(name, bytes)| (name, bytes.len() as u64, field_digest(bytes))),
    )
}

/// A reader that hashes what passes through it ([`field_digest`] of the bytes read).
pub struct HashingReader<'a> {
    inner: &'a mut dyn Read,
    hasher: Xxh3,
}

impl<'a> HashingReader<'a> {
    /// Hashes what is read from `inner`.
    pub fn new(inner: &'a mut dyn Read) -> Self {
        Self {
            inner,
            hasher: Xxh3::new(),
        }
    }

    /// The digest of the bytes read so far.
    pub fn digest(&self) -> Digest {
        self.hasher.digest128()
    }
}

impl Read for HashingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Reads `a` and `b` to their ends; true when they yield the same bytes.
pub fn same_bytes(a: &mut dyn Read, b: &mut dyn Read) -> io::Result<bool> {
    let (mut x, mut y) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let n = read_full(a, &mut x)?;
        let m = read_full(b, &mut y)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_and_memory_digests_agree_and_names_count() {
        let a = memory_digest([("jpg", &b"abc"[..]), ("cls", &b"1"[..])]);
        let mut data: &[u8] = b"abc";
        let mut reader = HashingReader::new(&mut data);
        io::copy(&mut reader, &mut io::sink()).unwrap();
        let streamed = sample_digest([("jpg", 3, reader.digest()), ("cls", 1, field_digest(b"1"))]);
        assert_eq!(a, streamed);
        assert_ne!(a, memory_digest([("png", &b"abc"[..]), ("cls", &b"1"[..])]));
        assert_ne!(a, memory_digest([("jpg", &b"abc1"[..]), ("cls", &b""[..])]));
        assert_ne!(a, memory_digest([("cls", &b"1"[..]), ("jpg", &b"abc"[..])]));
    }

    #[test]
    fn same_bytes_compares_across_chunk_boundaries() {
        let x = vec![7u8; 200_000];
        let mut y = x.clone();
        assert!(same_bytes(&mut &x[..], &mut &y[..]).unwrap());
        y[150_000] = 8;
        assert!(!same_bytes(&mut &x[..], &mut &y[..]).unwrap());
        assert!(!same_bytes(&mut &x[..], &mut &x[..199_999]).unwrap());
    }
}
