//! The bytes of a tar, read forward: by positioned reads with a read-ahead buffer (a
//! plain tar, or a decompressed copy), or from a decompressing stream that may copy
//! what it yields into a spill file.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use shardsmith_store::RangeRead;

/// Bytes of a tar from the current position on.
pub(super) trait TarBytes {
    /// Offset of the next byte.
    fn pos(&self) -> u64;
    /// Fills `buf` as far as the input goes; fewer bytes only at its end.
    fn fill(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Moves `n` bytes forward; fewer only at the end of the input.
    fn skip(&mut self, n: u64) -> io::Result<u64>;
    /// Length of the whole input, when known before reading it.
    fn len(&self) -> Option<u64>;
}

/// The compressions a shard may have, told by magic bytes as `tarfile` mode `r|*` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Codec {
    Gz,
    Zstd,
}

impl Codec {
    pub fn sniff(head: &[u8]) -> Option<Codec> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Codec::Gz)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Codec::Zstd)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Codec::Gz => "gzip",
            Codec::Zstd => "zstd",
        }
    }
}

/// Positioned reads through a read-ahead buffer.
pub(super) struct Positioned {
    src: Arc<dyn RangeRead>,
    len: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_at: u64,
    pos: u64,
    /// Bytes read ahead when the buffer is refilled.
    ahead: usize,
}

impl Positioned {
    pub fn new(src: Arc<dyn RangeRead>, ahead: usize) -> Self {
        let len = src.len();
        Self {
            src,
            len,
            buf: Vec::new(),
            buf_at: 0,
            pos: 0,
            ahead,
        }
    }

    /// Moves to `pos` (the buffer is kept while it covers it).
    pub fn seek(&mut self, pos: u64) {
        self.pos = pos.min(self.len);
    }

    /// True when `pos` is in the buffer.
    pub fn buffered(&self, pos: u64) -> bool {
        pos >= self.buf_at && pos < self.buf_at + self.buf.len() as u64
    }

    pub fn set_ahead(&mut self, ahead: usize) {
        self.ahead = ahead;
    }

    /// Reads at `at` until `out` is full or the input ends.
    fn read_full(&self, mut at: u64, out: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < out.len() {
            match self.src.read_at(at, &mut out[done..]) {
                Ok(0) => break,
                Ok(n) => {
                    done += n;
                    at += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

impl TarBytes for Positioned {
    fn pos(&self) -> u64 {
        self.pos
    }

    fn fill(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < out.len() && self.pos < self.len {
            if self.buffered(self.pos) {
                let from = (self.pos - self.buf_at) as usize;
                let n = (self.buf.len() - from).min(out.len() - done);
                out[done..done + n].copy_from_slice(&self.buf[from..from + n]);
                done += n;
                self.pos += n as u64;
            } else if out.len() - done >= self.ahead {
                let n = self.read_full(self.pos, &mut out[done..])?;
                done += n;
                self.pos += n as u64;
                break;
            } else {
                let want = (self.ahead as u64).min(self.len - self.pos) as usize;
                let mut buf = std::mem::take(&mut self.buf);
                buf.resize(want, 0);
                let n = self.read_full(self.pos, &mut buf)?;
                buf.truncate(n);
                self.buf = buf;
                self.buf_at = self.pos;
                if n == 0 {
                    break;
                }
            }
        }
        Ok(done)
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let n = n.min(self.len - self.pos);
        self.pos += n;
        Ok(n)
    }

    fn len(&self) -> Option<u64> {
        Some(self.len)
    }
}

/// A [`RangeRead`] read forward as a stream (the compressed bytes of a shard).
pub(super) struct RangeReader {
    src: Arc<dyn RangeRead>,
    pos: u64,
    /// Compressed bytes consumed, shared with the error messages.
    pub consumed: Arc<AtomicU64>,
}

impl RangeReader {
    pub fn new(src: Arc<dyn RangeRead>) -> Self {
        Self {
            src,
            pos: 0,
            consumed: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read_at(self.pos, buf)?;
        self.pos += n as u64;
        self.consumed.store(self.pos, Ordering::Relaxed);
        Ok(n)
    }
}

/// A decompressing stream of a shard, copied into `spill` as it is read when given.
pub(super) struct Stream {
    inner: Box<dyn Read + Send>,
    codec: Codec,
    consumed: Arc<AtomicU64>,
    pos: u64,
    spill: Option<io::BufWriter<File>>,
}

impl Stream {
    /// Decompresses the shard `src` holds.
    pub fn open(src: Arc<dyn RangeRead>, codec: Codec, spill: Option<File>) -> io::Result<Self> {
        let raw = RangeReader::new(src);
        let consumed = raw.consumed.clone();
        let buffered = io::BufReader::with_capacity(1 << 20, raw);
        let inner: Box<dyn Read + Send> = match codec {
            Codec::Gz => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
            Codec::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(buffered)?),
        };
        Ok(Self {
            inner,
            codec,
            consumed,
            pos: 0,
            spill: spill.map(|f| io::BufWriter::with_capacity(1 << 20, f)),
        })
    }

    /// A decoder failure as a message with both offsets.
    fn damaged(&self, e: &io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "the {} stream is corrupt or truncated ({e}) at decompressed offset {}, after {} compressed bytes",
                self.codec.name(),
                self.pos,
                self.consumed.load(Ordering::Relaxed)
            ),
        )
    }

    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Ok(n) => {
                    if let Some(spill) = &mut self.spill {
                        spill.write_all(&buf[..n]).map_err(|e| {
                            io::Error::new(
                                e.kind(),
                                format!("writing its decompressed copy into the scratch directory failed: {e}"),
                            )
                        })?;
                    }
                    self.pos += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.damaged(&e)),
            }
        }
    }

    /// Reads what is left (at most `limit` bytes), so that a damaged end of the
    /// compressed stream (its checksum, a cut trailer) is found; returns the spill file.
    /// Bytes after a complete gzip member that do not start another one (zero padding,
    /// junk) end the stream, as for Python's `tarfile`, which never reads them.
    pub fn finish(mut self, limit: u64) -> io::Result<Option<File>> {
        let mut buf = vec![0u8; 64 << 10];
        let mut left = limit;
        while left > 0 {
            let want = (buf.len() as u64).min(left) as usize;
            let n = match self.inner.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if self.codec == Codec::Gz && e.to_string() == "invalid gzip header" => {
                    break;
                }
                Err(e) => return Err(self.damaged(&e)),
            };
            self.pos += n as u64;
            left -= n as u64;
        }
        match self.spill.take() {
            Some(spill) => Ok(Some(spill.into_inner().map_err(|e| e.into_error())?)),
            None => Ok(None),
        }
    }
}

impl TarBytes for Stream {
    fn pos(&self) -> u64 {
        self.pos
    }

    fn fill(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_some(&mut buf[done..])?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let mut buf = [0u8; 64 << 10];
        let mut done = 0;
        while done < n {
            let want = (buf.len() as u64).min(n - done) as usize;
            let got = self.read_some(&mut buf[..want])?;
            if got == 0 {
                break;
            }
            done += got as u64;
        }
        Ok(done)
    }

    fn len(&self) -> Option<u64> {
        None
    }
}
