use std::io::{self, Write};

use sha2::{Digest as _, Sha256};

use crate::chunks::{ChunkDigests, ChunkHasher, ChunkPolicy, ExpectedSize};
use crate::hex::hex;

/// Default size of the chunks whose CRC-32 is recorded next to each file's SHA-256. On a
/// hash mismatch the chunk CRCs say *where* the file differs, to within one chunk.
pub const DEFAULT_CHUNK_SIZE: u64 = 1 << 20;

/// Streaming digest of one file: SHA-256 of the whole, CRC-32 of every chunk, length.
///
/// SHA-256 uses the CPU's SHA extensions when present (sha2 detects them at run time);
/// CRC-32 uses PCLMULQDQ (crc32fast), so the chunk checksums cost a few percent.
pub struct Digester {
    sha: Sha256,
    crc: crc32fast::Hasher,
    chunk_size: u64,
    in_chunk: u64,
    chunks: Vec<u32>,
    len: u64,
    /// SHA-256 of every chunk of the policy's size, for files that reach its threshold.
    sharded: Option<(ChunkHasher, u64)>,
}

impl Digester {
    /// A digester recording one CRC-32 per `chunk_size` bytes (must be non-zero).
    pub fn new(chunk_size: u64) -> Self {
        assert!(chunk_size > 0, "chunk size must be non-zero");
        Self {
            sha: Sha256::new(),
            crc: crc32fast::Hasher::new(),
            chunk_size,
            in_chunk: 0,
            chunks: Vec::new(),
            len: 0,
            sharded: None,
        }
    }

    /// A digester that also takes the SHA-256 of every chunk ([`ChunkPolicy`]) when the
    /// file may reach the policy's threshold, by what is `expected` of its size. The
    /// chunks are hashed on a thread of their own; the digest lists them only when the
    /// file did reach the threshold.
    pub fn expecting(chunk_size: u64, expected: ExpectedSize) -> Self {
        let mut digester = Self::new(chunk_size);
        let policy = ChunkPolicy::default();
        if policy.may_need(expected) {
            digester.sharded = Some((ChunkHasher::new(policy.chunk_size), policy.threshold));
        }
        digester
    }

    /// Feeds the next bytes of the file.
    pub fn update(&mut self, mut data: &[u8]) {
        self.sha.update(data);
        self.len += data.len() as u64;
        if let Some((sharded, _)) = self.sharded.as_mut() {
            sharded.update(data);
        }
        while !data.is_empty() {
            let room = self.chunk_size - self.in_chunk;
            let take = data.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            self.crc.update(&data[..take]);
            self.in_chunk += take as u64;
            data = &data[take..];
            if self.in_chunk == self.chunk_size {
                let done = std::mem::replace(&mut self.crc, crc32fast::Hasher::new());
                self.chunks.push(done.finalize());
                self.in_chunk = 0;
            }
        }
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing was fed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ends the file and returns its digest.
    pub fn finish(mut self) -> FileDigest {
        if self.in_chunk > 0 {
            self.chunks.push(self.crc.finalize());
        }
        let sharded = self.sharded.and_then(|(hasher, threshold)| {
            let size = hasher.chunk_size();
            let digests = hasher.finish()?;
            (self.len >= threshold).then(|| ChunkDigests::new(size, &digests))
        });
        FileDigest {
            size: self.len,
            sha256: self.sha.finalize().into(),
            chunk_size: self.chunk_size,
            chunk_crc32: self.chunks,
            sharded,
        }
    }
}

/// The digest of one complete file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    /// Length in bytes.
    pub size: u64,
    /// SHA-256 of the whole file.
    pub sha256: [u8; 32],
    /// Chunk size the CRCs were taken over.
    pub chunk_size: u64,
    /// CRC-32 (IEEE) of each chunk, the last one possibly short.
    pub chunk_crc32: Vec<u32>,
    /// SHA-256 of each chunk, for a file that reached the chunk-list threshold while
    /// a [`Digester::expecting`] it read or wrote it.
    pub sharded: Option<ChunkDigests>,
}

impl FileDigest {
    /// SHA-256 as 64 lowercase hex digits.
    pub fn sha256_hex(&self) -> String {
        hex(&self.sha256)
    }

    /// Chunk CRCs as one string of 8 hex digits per chunk (the manifest's encoding).
    pub fn chunks_hex(&self) -> String {
        let mut out = String::with_capacity(self.chunk_crc32.len() * 8);
        for crc in &self.chunk_crc32 {
            out.push_str(&format!("{crc:08x}"));
        }
        out
    }
}

/// Parses the manifest's chunk string back into CRCs; `None` if malformed.
pub(crate) fn parse_chunks(text: &str) -> Option<Vec<u32>> {
    if !text.len().is_multiple_of(8) || !text.is_ascii() {
        return None;
    }
    text.as_bytes()
        .chunks(8)
        .map(|c| u32::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// A writer that digests every byte it passes on: shards are hashed while they are
/// written, never read back.
pub struct HashingWriter<W> {
    inner: W,
    digester: Digester,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`, recording chunk CRCs every `chunk_size` bytes.
    pub fn new(inner: W, chunk_size: u64) -> Self {
        Self {
            inner,
            digester: Digester::new(chunk_size),
        }
    }

    /// As [`HashingWriter::new`], with chunk SHA-256s when the output may reach the
    /// chunk-list threshold ([`Digester::expecting`]).
    pub fn expecting(inner: W, chunk_size: u64, expected: ExpectedSize) -> Self {
        Self {
            inner,
            digester: Digester::expecting(chunk_size, expected),
        }
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.digester.len()
    }

    /// Returns the inner writer (not flushed) and the digest of everything written.
    pub fn finish(self) -> (W, FileDigest) {
        (self.inner, self.digester.finish())
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digester.update(&buf[..n]);
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)?;
        self.digester.update(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_vectors() {
        let d = Digester::new(4).finish();
        assert_eq!(
            d.sha256_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(d.chunk_crc32.is_empty());
    }

    #[test]
    fn chunks_split_exactly_whatever_the_write_sizes() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut one = Digester::new(1000);
        one.update(&data);
        let one = one.finish();
        let mut many = Digester::new(1000);
        for piece in data.chunks(37) {
            many.update(piece);
        }
        let many = many.finish();
        assert_eq!(one, many);
        assert_eq!(one.chunk_crc32.len(), 10);
        assert_eq!(one.chunk_crc32[3], crc32fast::hash(&data[3000..4000]));
        let mut short = Digester::new(1000);
        short.update(&data[..2500]);
        let short = short.finish();
        assert_eq!(short.chunk_crc32.len(), 3);
        assert_eq!(short.chunk_crc32[2], crc32fast::hash(&data[2000..2500]));
        assert_eq!(parse_chunks(&short.chunks_hex()), Some(short.chunk_crc32));
        assert_eq!(parse_chunks("abc"), None);
        assert_eq!(parse_chunks("zzzzzzzz"), None);
    }

    #[test]
    fn hashing_writer_passes_bytes_and_digests_them() {
        let mut w = HashingWriter::new(Vec::new(), 4);
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        assert_eq!(w.position(), 11);
        let (inner, digest) = w.finish();
        assert_eq!(inner, b"hello world");
        let mut d = Digester::new(4);
        d.update(b"hello world");
        assert_eq!(digest, d.finish());
    }
}
