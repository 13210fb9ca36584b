//! Fetching a file by its chunks: the chunks of a file whose manifest entry lists their
//! SHA-256s are read with positioned reads (ranged GETs of 8 MiB from an object store),
//! several chunks at once, each hashed by the thread that fetched it as soon as it arrived and compared
//! with its digest. A chunk that differs is fetched once more (a fault in transit); if
//! it differs again the file is lost and no further chunk of it is fetched. Chunks are
//! handed to the writer in file order (the destination is written sequentially), so a
//! chunk that arrives before an earlier one waits in its buffer.
//!
//! Memory: every chunk in flight or waiting holds a buffer of the [`ChunkPool`], which
//! all the files of a stage share; the pool allocates at most its budget (one chunk
//! when a chunk is larger). A file's chunks take their buffers in file order, so the
//! next chunk to write of every file always has one: the pool cannot be held up by
//! chunks waiting for an earlier chunk that has none.

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, mpsc};

use shardsmith_manifest::{ChunkDigests, sha256_hex};

use crate::{Error, RangeRead, Result};

/// Bytes of one read (one ranged GET from an object store): a chunk is read in pieces
/// of this size, each well within the time one request may take, as a streamed object
/// is.
const PIECE: usize = 8 << 20;

/// The chunk buffers of a stage, shared by all its files.
pub(super) struct ChunkPool {
    /// Bytes of buffers allocated at most (one buffer may exceed it alone).
    budget: u64,
    state: Mutex<Pooled>,
    freed: Condvar,
}

struct Pooled {
    /// Capacity of every buffer allocated, handed out or free.
    allocated: u64,
    free: Vec<Vec<u8>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ChunkPool {
    /// A pool of at most `budget` bytes of buffers.
    pub(super) fn new(budget: u64) -> Self {
        Self {
            budget,
            state: Mutex::new(Pooled {
                allocated: 0,
                free: Vec::new(),
            }),
            freed: Condvar::new(),
        }
    }

    /// How many chunks of `chunk` bytes the pool holds at once (at least one).
    pub(super) fn slots(&self, chunk: u64) -> usize {
        usize::try_from(self.budget / chunk.max(1))
            .unwrap_or(usize::MAX)
            .max(1)
    }

    /// A buffer of `len` bytes, waiting while the budget is spent; `None` once `stop`
    /// is set (see [`ChunkPool::wake`]).
    fn take(&self, len: usize, stop: &AtomicBool) -> Option<Vec<u8>> {
        let mut state = lock(&self.state);
        loop {
            if stop.load(Ordering::Acquire) {
                return None;
            }
            if let Some(i) = state.free.iter().position(|b| b.capacity() >= len) {
                let mut buf = state.free.swap_remove(i);
                buf.resize(len, 0);
                return Some(buf);
            }
            if state.allocated + len as u64 <= self.budget || state.allocated == 0 {
                let buf = vec![0u8; len];
                state.allocated += buf.capacity() as u64;
                return Some(buf);
            }
            // Room only once a free buffer too small for this chunk is dropped.
            if let Some(small) = state.free.pop() {
                state.allocated -= small.capacity() as u64;
                continue;
            }
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Returns a buffer for the next chunk.
    fn give(&self, buf: Vec<u8>) {
        lock(&self.state).free.push(buf);
        self.freed.notify_all();
    }

    /// Wakes the fetchers waiting for a buffer, so that those whose file stopped see it.
    fn wake(&self) {
        let _state = lock(&self.state);
        self.freed.notify_all();
    }
}

/// One file to fetch by its chunks.
pub(super) struct Chunked<'a> {
    /// The file, opened for positioned reads.
    pub(super) reader: &'a dyn RangeRead,
    /// How read failures name it.
    pub(super) display: String,
    /// Its chunk list, usable for its size.
    pub(super) list: &'a ChunkDigests,
    /// Its size.
    pub(super) size: u64,
    /// Chunks of this file fetched at once, at most.
    pub(super) fetchers: usize,
    pub(super) pool: &'a ChunkPool,
    /// Gets the bytes of each piece of a chunk as it arrives (a chunk read again is not
    /// counted twice).
    pub(super) progress: &'a (dyn Fn(u64) + Sync),
}

/// A chunk that differed from its digest on both reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BadChunk {
    /// Its index in the list.
    pub(super) index: usize,
    /// Its bytes.
    pub(super) range: Range<u64>,
    /// The list's digest and the one read (the second time).
    pub(super) expected: String,
    pub(super) actual: String,
}

/// How fetching a file by its chunks ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fetched {
    /// Every chunk matched and was written, in order; `refetched` of them only on their
    /// second read.
    Matched { refetched: usize },
    /// The first chunk of the file that differs (later chunks were not all fetched).
    Bad(BadChunk),
    /// The file ended within this chunk: it is shorter than when it was opened.
    Ended(Range<u64>),
}

/// What a fetcher hands over for one chunk.
enum Arrived {
    /// The chunk's bytes, which matched (on the second read when `true`).
    Good(Vec<u8>, bool),
    Lost(Lost),
}

/// Why a chunk, and so its file, is lost.
enum Lost {
    Bad(BadChunk),
    Ended(Range<u64>),
    Failed(io::Error),
}

/// Fetches every chunk of `job` (up to `job.fetchers` at once), checks each as it
/// arrives, and feeds them in order to `write`, stopping at the first chunk that
/// differs twice, the first read failure or the first write failure. Which of them is
/// reported does not depend on timing: chunks are started in order, so when one fails
/// every earlier chunk was started, and the earliest failure is reported once they are
/// all in.
pub(super) fn fetch_chunks(
    job: &Chunked<'_>,
    write: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<Fetched> {
    let chunk = job.list.chunk_size().unwrap_or(job.size.max(1));
    let count = job.list.sha256.len();
    let next = Mutex::new(0usize);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Arrived)>();
    std::thread::scope(|scope| {
        for _ in 0..job.fetchers.clamp(1, count.max(1)) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                while let Some((index, buf)) = admit(job, chunk, count, next, stop) {
                    let arrived = fetch_one(job, chunk, index, buf);
                    let good = matches!(arrived, Arrived::Good(..));
                    if tx.send((index, arrived)).is_err() || !good {
                        return;
                    }
                }
            });
        }
        drop(tx);
        receive(job, count, &stop, rx, write)
    })
}

/// The next chunk to fetch and its buffer, taken in file order; `None` when every chunk
/// was started or the file stopped.
fn admit(
    job: &Chunked<'_>,
    chunk: u64,
    count: usize,
    next: &Mutex<usize>,
    stop: &AtomicBool,
) -> Option<(usize, Vec<u8>)> {
    let mut next = lock(next);
    if stop.load(Ordering::Acquire) || *next >= count {
        return None;
    }
    let index = *next;
    let range = ChunkDigests::range(chunk, index, job.size);
    let len = usize::try_from(range.end - range.start).ok()?;
    let buf = job.pool.take(len, stop)?;
    *next += 1;
    Some((index, buf))
}

/// Reads chunk `index` into `buf` and checks it, reading it once more if it differs.
fn fetch_one(job: &Chunked<'_>, chunk: u64, index: usize, mut buf: Vec<u8>) -> Arrived {
    let range = ChunkDigests::range(chunk, index, job.size);
    let expected = &job.list.sha256[index];
    let mut actual = String::new();
    for attempt in 0..2 {
        let mut at = range.start;
        for piece in buf.chunks_mut(PIECE) {
            if let Err(e) = job.reader.read_exact_at(at, piece) {
                job.pool.give(buf);
                return Arrived::Lost(match e.kind() {
                    io::ErrorKind::UnexpectedEof => Lost::Ended(range),
                    _ => Lost::Failed(e),
                });
            }
            at += piece.len() as u64;
            // A chunk read again is not shown twice.
            if attempt == 0 {
                (job.progress)(piece.len() as u64);
            }
        }
        actual = sha256_hex(&buf);
        if actual.eq_ignore_ascii_case(expected) {
            return Arrived::Good(buf, attempt > 0);
        }
    }
    job.pool.give(buf);
    Arrived::Lost(Lost::Bad(BadChunk {
        index,
        range,
        expected: expected.clone(),
        actual,
    }))
}

/// The writer's side: writes the chunks in order as they come in, until every fetcher
/// is done.
fn receive(
    job: &Chunked<'_>,
    count: usize,
    stop: &AtomicBool,
    rx: mpsc::Receiver<(usize, Arrived)>,
    write: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<Fetched> {
    let halt = || {
        stop.store(true, Ordering::Release);
        job.pool.wake();
    };
    let mut waiting: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let mut written = 0usize;
    let mut refetched = 0usize;
    let mut failed: Option<(usize, Lost)> = None;
    let mut write_error: Option<Error> = None;
    for (index, arrived) in rx {
        match arrived {
            Arrived::Good(buf, again) => {
                refetched += usize::from(again);
                if failed.is_some() || write_error.is_some() {
                    // The file is lost: nothing more is written.
                    job.pool.give(buf);
                    continue;
                }
                waiting.insert(index, buf);
                while let Some(buf) = waiting.remove(&written) {
                    let done = write(&buf);
                    job.pool.give(buf);
                    written += 1;
                    if let Err(e) = done {
                        write_error = Some(e);
                        halt();
                        break;
                    }
                }
            }
            Arrived::Lost(lost) => {
                if failed.as_ref().is_none_or(|(first, _)| index < *first) {
                    failed = Some((index, lost));
                }
                halt();
            }
        }
        if failed.is_some() || write_error.is_some() {
            for (_, buf) in std::mem::take(&mut waiting) {
                job.pool.give(buf);
            }
        }
    }
    if let Some(e) = write_error {
        return Err(e);
    }
    match failed {
        None => {
            debug_assert_eq!(written, count, "every chunk was written");
            Ok(Fetched::Matched { refetched })
        }
        Some((_, Lost::Bad(bad))) => Ok(Fetched::Bad(bad)),
        Some((_, Lost::Ended(range))) => Ok(Fetched::Ended(range)),
        Some((_, Lost::Failed(e))) => Err(Error::io("reading", job.display.as_str(), e)),
    }
}
