//! The content check of a cache's blobs: each one hashed while it is read, in bounded
//! memory, and compared with the name the hub stored it under.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use sha1::{Digest as _, Sha1};
use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, Digester, hex};

/// Bytes read at a time from one blob.
const READ_BLOCK: usize = 1 << 20;

/// How a blob's name addresses its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Address {
    /// 64 hex digits: the SHA-256 of the content (files stored with Git LFS).
    Sha256,
    /// 40 hex digits: the git blob id, SHA-1 of `blob {len}\0` and the content.
    GitSha1,
}

impl Address {
    /// The address a blob's file name is, if it is one (lowercase hex, as the hub writes).
    pub(super) fn of(name: &str) -> Option<Self> {
        if !is_lower_hex(name) {
            return None;
        }
        match name.len() {
            64 => Some(Self::Sha256),
            40 => Some(Self::GitSha1),
            _ => None,
        }
    }

    /// What the digest is called in messages.
    pub(super) fn what(self) -> &'static str {
        match self {
            Self::Sha256 => "SHA-256",
            Self::GitSha1 => "git blob SHA-1",
        }
    }
}

/// True for a non-empty string of lowercase hex digits.
pub(super) fn is_lower_hex(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One blob to hash.
pub(super) struct Job {
    pub(super) path: PathBuf,
    pub(super) address: Address,
    pub(super) size: u64,
}

/// Reads the blob once and returns its digest as lowercase hex.
pub(super) fn digest(job: &Job, progress: &(dyn Fn(u64) + Sync)) -> io::Result<String> {
    let mut file = File::open(&job.path)?;
    let mut buf = vec![0u8; READ_BLOCK];
    match job.address {
        Address::Sha256 => {
            let mut digester = Digester::new(DEFAULT_CHUNK_SIZE);
            read_all(
                &mut file,
                &mut buf,
                &mut |data| digester.update(data),
                progress,
            )?;
            Ok(digester.finish().sha256_hex())
        }
        Address::GitSha1 => {
            // The header carries the length: the one the file had when listed. A file
            // that grows or shrinks meanwhile gets a different id, which is a mismatch.
            let mut sha = Sha1::new();
            sha.update(format!("blob {}\0", job.size).as_bytes());
            read_all(&mut file, &mut buf, &mut |data| sha.update(data), progress)?;
            Ok(hex(&sha.finalize()))
        }
    }
}

fn read_all(
    file: &mut File,
    buf: &mut [u8],
    consume: &mut dyn FnMut(&[u8]),
    progress: &(dyn Fn(u64) + Sync),
) -> io::Result<()> {
    loop {
        let n = match file.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        consume(&buf[..n]);
        progress(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_git_blob_ids() {
        assert_eq!(Address::of(&"a".repeat(64)), Some(Address::Sha256));
        assert_eq!(Address::of(&"0".repeat(40)), Some(Address::GitSha1));
        assert_eq!(Address::of(&"A".repeat(40)), None);
        assert_eq!(Address::of("abc"), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, "hello\n").unwrap();
        let job = Job {
            path,
            address: Address::GitSha1,
            size: 6,
        };
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            digest(&job, &|_| {}).unwrap(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }
}
