//! The transformed samples' bytes, kept until their shard is written: an unnamed
//! temporary file (gone when the run ends, however it ends), appended to from every
//! worker at once and read back at offsets.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// An append-only scratch file.
pub(crate) struct Spill {
    file: File,
    len: AtomicU64,
    dir: String,
}

impl Spill {
    /// A new, empty spill file in `dir` (created if missing).
    pub(crate) fn new(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self {
            file: tempfile::tempfile_in(dir)?,
            len: AtomicU64::new(0),
            dir: dir.display().to_string(),
        })
    }

    /// Where it is, for messages.
    pub(crate) fn dir(&self) -> &str {
        &self.dir
    }

    /// Stores `bytes`; returns their offset.
    pub(crate) fn put(&self, bytes: &[u8]) -> io::Result<u64> {
        let offset = self.len.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.file.write_all_at(bytes, offset)?;
        Ok(offset)
    }

    /// Appends the `len` bytes at `offset` to `buf`.
    pub(crate) fn get(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        let start = buf.len();
        buf.resize(start + len as usize, 0);
        self.file.read_exact_at(&mut buf[start..], offset)
    }

    /// Bytes stored.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_puts_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(&dir.path().join("new")).unwrap();
        let offsets: Vec<(u64, Vec<u8>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u8)
                .map(|i| {
                    let spill = &spill;
                    s.spawn(move || {
                        let bytes = vec![i; 1000 + usize::from(i)];
                        (spill.put(&bytes).unwrap(), bytes)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(spill.len(), (0..8).map(|i| 1000 + i).sum::<u64>());
        for (offset, bytes) in offsets {
            let mut buf = b"x".to_vec();
            spill.get(offset, bytes.len() as u64, &mut buf).unwrap();
            assert_eq!(&buf[1..], &bytes[..]);
        }
        // Nothing is left behind in the directory.
        assert_eq!(
            std::fs::read_dir(dir.path().join("new")).unwrap().count(),
            0
        );
    }
}
