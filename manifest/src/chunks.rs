//! Chunk digests: the SHA-256 of every fixed-size chunk of a large file, recorded beside
//! its whole-file SHA-256 so that `verify` checks the chunks on every core, names the
//! damaged byte range, and can check any range on its own.
//!
//! The chunk list is named the way model_signing names its shard digests,
//! `sha256-sharded-N` (N the chunk size in bytes): a later kind of list (a tree of
//! small leaves, for data already in GPU memory) gets another name, and a verifier that
//! does not know a name falls back to the whole-file digest.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::hex::hex;

/// Chunk size of the SHA-256 chunk lists shardsmith writes: 64 MiB, a multiple of the
/// CRC chunk size, small enough that a 2 GiB file splits into 32 pieces for the cores
/// of a node, large enough that a 500 GB model lists about 7,500 digests (500 KB).
pub const CHUNK_SHA_SIZE: u64 = 64 << 20;
/// Files at least this large get a chunk list: a dataset of many shards already
/// verifies in parallel across files, so only files far above a typical shard need one.
pub const CHUNK_SHA_THRESHOLD: u64 = 1 << 30;
/// Prefix of the algorithm name of SHA-256 chunk lists.
pub const SHARDED_PREFIX: &str = "sha256-sharded-";

/// What a manifest says about chunk lists: which files have one and how it was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkPolicy {
    /// Hash of each chunk (`sha256`).
    pub algorithm: ChunkHash,
    /// Chunk size in bytes.
    pub chunk_size: u64,
    /// Files of at least this many bytes have a chunk list.
    pub threshold: u64,
}

/// Hash function of a chunk list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkHash {
    /// SHA-256 of each chunk.
    Sha256,
}

/// What a reader or writer knows of a file's size before its bytes, which decides
/// whether its chunks are hashed ([`ChunkPolicy::may_need`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedSize {
    /// Nothing: chunks are hashed, and listed if the file reaches the threshold.
    Unknown,
    /// An estimate (a shard's planned payload, before the format's overhead).
    About(u64),
    /// A bound the file cannot exceed (its listed size, the most bytes its input can
    /// give).
    AtMost(u64),
}

impl Default for ChunkPolicy {
    fn default() -> Self {
        Self {
            algorithm: ChunkHash::Sha256,
            chunk_size: CHUNK_SHA_SIZE,
            threshold: CHUNK_SHA_THRESHOLD,
        }
    }
}

impl ChunkPolicy {
    /// Whether a file of the `expected` size may reach the threshold, so that its
    /// chunks are hashed as it is read or written: an estimate from half the threshold
    /// up, a bound from the threshold up, an unknown size always.
    pub fn may_need(&self, expected: ExpectedSize) -> bool {
        match expected {
            ExpectedSize::Unknown => true,
            ExpectedSize::About(size) => size.saturating_mul(2) >= self.threshold,
            ExpectedSize::AtMost(size) => size >= self.threshold,
        }
    }

    /// The algorithm name of this policy's chunk lists.
    pub fn list_name(&self) -> String {
        format!("{SHARDED_PREFIX}{}", self.chunk_size)
    }
}

/// The SHA-256 of every chunk of one file (a manifest entry's `chunks`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkDigests {
    /// `sha256-sharded-N`: SHA-256 of each N-byte chunk from offset 0, the last one
    /// short (model_signing's name for the same digests).
    pub algorithm: String,
    /// One lowercase hex digest per chunk, in file order.
    pub sha256: Vec<String>,
}

impl ChunkDigests {
    /// The list for `digests` taken over `chunk_size`-byte chunks.
    pub fn new(chunk_size: u64, digests: &[[u8; 32]]) -> Self {
        Self {
            algorithm: format!("{SHARDED_PREFIX}{chunk_size}"),
            sha256: digests.iter().map(|d| hex(d)).collect(),
        }
    }

    /// The chunk size, when the algorithm is one this version checks
    /// (`sha256-sharded-N`, N > 0); `None` for any other.
    pub fn chunk_size(&self) -> Option<u64> {
        let n: u64 = self.algorithm.strip_prefix(SHARDED_PREFIX)?.parse().ok()?;
        (n > 0).then_some(n)
    }

    /// The byte range of chunk `index` of a file of `size` bytes.
    pub fn range(chunk_size: u64, index: usize, size: u64) -> std::ops::Range<u64> {
        let start = chunk_size.saturating_mul(index as u64).min(size);
        start..start.saturating_add(chunk_size).min(size)
    }

    /// Whether the list has exactly one digest per chunk of a `size`-byte file, each of
    /// 64 hex digits: the condition for checking by chunks.
    pub fn fits(&self, size: u64) -> bool {
        self.chunk_size().is_some_and(|n| {
            size.div_ceil(n) == self.sha256.len() as u64
                && self
                    .sha256
                    .iter()
                    .all(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        })
    }
}

/// Size of the blocks handed to the chunk hashing thread.
const BLOCK: usize = 1 << 20;
/// Blocks in flight to it: bounds the memory at a few MiB per large file.
const IN_FLIGHT: usize = 8;

/// Hashes every `chunk_size` chunk of a stream on a thread of its own, so that the
/// thread that computes the whole-file SHA-256 (and the CRCs) does not do the work
/// twice: the bytes are copied into blocks and handed over. Falls back to hashing
/// inline when no thread can be started.
pub(crate) struct ChunkHasher {
    chunk_size: u64,
    block: Vec<u8>,
    sender: Option<SyncSender<Vec<u8>>>,
    free: Option<Receiver<Vec<u8>>>,
    worker: Option<JoinHandle<Vec<[u8; 32]>>>,
    inline: Option<Chunker>,
}

/// The per-chunk SHA-256 state.
struct Chunker {
    chunk_size: u64,
    sha: Sha256,
    in_chunk: u64,
    digests: Vec<[u8; 32]>,
}

impl Chunker {
    fn new(chunk_size: u64) -> Self {
        Self {
            chunk_size,
            sha: Sha256::new(),
            in_chunk: 0,
            digests: Vec::new(),
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let room = self.chunk_size - self.in_chunk;
            let take = data.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            self.sha.update(&data[..take]);
            self.in_chunk += take as u64;
            data = &data[take..];
            if self.in_chunk == self.chunk_size {
                self.digests.push(self.sha.finalize_reset().into());
                self.in_chunk = 0;
            }
        }
    }

    fn finish(mut self) -> Vec<[u8; 32]> {
        if self.in_chunk > 0 {
            self.digests.push(self.sha.finalize().into());
        }
        self.digests
    }
}

impl ChunkHasher {
    /// A hasher of `chunk_size`-byte chunks (non-zero).
    pub(crate) fn new(chunk_size: u64) -> Self {
        assert!(chunk_size > 0, "chunk size must be non-zero");
        let (sender, blocks) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (give_back, free) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let worker = std::thread::Builder::new()
            .name("chunk-sha256".into())
            .spawn(move || {
                let mut chunker = Chunker::new(chunk_size);
                for mut block in blocks {
                    chunker.update(&block);
                    block.clear();
                    // A full return channel only means the writer has enough blocks.
                    let _ = give_back.try_send(block);
                }
                chunker.finish()
            });
        match worker {
            Ok(worker) => Self {
                chunk_size,
                block: Vec::with_capacity(BLOCK),
                sender: Some(sender),
                free: Some(free),
                worker: Some(worker),
                inline: None,
            },
            Err(_) => Self {
                chunk_size,
                block: Vec::new(),
                sender: None,
                free: None,
                worker: None,
                inline: Some(Chunker::new(chunk_size)),
            },
        }
    }

    /// The chunk size.
    pub(crate) fn chunk_size(&self) -> u64 {
        self.chunk_size
    }

    /// Feeds the next bytes.
    pub(crate) fn update(&mut self, mut data: &[u8]) {
        if let Some(inline) = self.inline.as_mut() {
            inline.update(data);
            return;
        }
        while !data.is_empty() {
            let take = (BLOCK - self.block.len()).min(data.len());
            self.block.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.block.len() == BLOCK {
                self.hand_over();
            }
        }
    }

    fn hand_over(&mut self) {
        let fresh = self
            .free
            .as_ref()
            .and_then(|free| free.try_recv().ok())
            .unwrap_or_else(|| Vec::with_capacity(BLOCK));
        let full = std::mem::replace(&mut self.block, fresh);
        let sent = self.sender.as_ref().is_some_and(|s| s.send(full).is_ok());
        if !sent {
            // The thread is gone (it panicked): hashing cannot go on, the result is
            // refused at `finish`.
            self.sender = None;
        }
    }

    /// The digest of every chunk, in order; `None` if the hashing thread failed.
    pub(crate) fn finish(mut self) -> Option<Vec<[u8; 32]>> {
        if let Some(inline) = self.inline.take() {
            return Some(inline.finish());
        }
        if !self.block.is_empty() {
            self.hand_over();
        }
        let alive = self.sender.take().is_some();
        let digests = self.worker.take()?.join().ok()?;
        alive.then_some(digests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_hand(data: &[u8], n: usize) -> Vec<[u8; 32]> {
        data.chunks(n).map(|c| Sha256::digest(c).into()).collect()
    }

    #[test]
    fn chunks_are_hashed_exactly_whatever_the_write_sizes() {
        let data: Vec<u8> = (0..(3 * BLOCK + 12_345))
            .map(|i| (i * 31 % 253) as u8)
            .collect();
        for chunk in [4096u64, 1 << 20, 3 << 20, 5_000_000] {
            for piece in [1usize, 777, BLOCK, 3 * BLOCK + 1] {
                let mut h = ChunkHasher::new(chunk);
                for p in data.chunks(piece) {
                    h.update(p);
                }
                assert_eq!(
                    h.finish().unwrap(),
                    by_hand(&data, chunk as usize),
                    "chunk {chunk}, piece {piece}"
                );
            }
        }
        assert_eq!(
            ChunkHasher::new(10).finish().unwrap(),
            Vec::<[u8; 32]>::new()
        );
    }

    #[test]
    fn lists_name_their_chunk_size_and_check_their_shape() {
        let digests = by_hand(&[7u8; 2500], 1000);
        let list = ChunkDigests::new(1000, &digests);
        assert_eq!(list.algorithm, "sha256-sharded-1000");
        assert_eq!(list.chunk_size(), Some(1000));
        assert!(list.fits(2500) && list.fits(2001));
        assert!(!list.fits(2000) && !list.fits(3001));
        assert_eq!(ChunkDigests::range(1000, 2, 2500), 2000..2500);
        for other in ["sha256-tree-65536", "sha256-sharded-0", "sha256-sharded-x"] {
            let list = ChunkDigests {
                algorithm: other.into(),
                sha256: list.sha256.clone(),
            };
            assert_eq!(list.chunk_size(), None, "{other}");
            assert!(!list.fits(2500));
        }
        let policy = ChunkPolicy::default();
        assert!(policy.may_need(ExpectedSize::Unknown));
        assert!(policy.may_need(ExpectedSize::About(CHUNK_SHA_THRESHOLD / 2)));
        assert!(!policy.may_need(ExpectedSize::About(CHUNK_SHA_THRESHOLD / 2 - 1)));
        assert!(policy.may_need(ExpectedSize::AtMost(CHUNK_SHA_THRESHOLD)));
        assert!(!policy.may_need(ExpectedSize::AtMost(CHUNK_SHA_THRESHOLD - 1)));
        assert_eq!(policy.list_name(), "sha256-sharded-67108864");
        assert_eq!(
            serde_json::to_value(policy).unwrap(),
            serde_json::json!({"algorithm": "sha256", "chunk_size": 67108864, "threshold": 1073741824})
        );
    }
}
