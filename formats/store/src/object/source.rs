//! An object store prefix as an [`InputSource`]: listing streamed page by page, small
//! objects fetched many at once ahead of the reader ([`InputSource::prefetch`]), large
//! ones streamed as parallel ranged GETs, and random access (Parquet) as ranged GETs.

use shardsmith_manifest::Classify;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use object_store::{ObjectStore, ObjectStoreExt};
use shardsmith_manifest::{MANIFEST_FILE, SUMS_FILE, TEMP_PREFIX};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::remote::{Remote, is_not_found, runtime};
use crate::files_from;
use crate::source::{InputListing, InputSource, ListedFile, Prefetched, RangeRead, ReadError};
use crate::{Error, Result};

/// Bytes of one ranged GET when a large object is streamed.
const RANGE: u64 = 8 << 20;
/// Ranged GETs in flight per streamed object (memory: this many × [`RANGE`]).
const RANGES_AHEAD: usize = 8;
/// Bytes of ranged GETs fetched ahead of all streamed objects together.
const RANGED_BUDGET: u64 = 256 << 20;
/// Bytes fetched ahead of all readers together (prefetch memory bound).
const PREFETCH_BUDGET: u64 = 256 << 20;

/// The objects under a prefix.
pub struct ObjectTree {
    remote: Arc<Remote>,
    /// Only these keys (relative to the prefix), each with its size (`--files-from`):
    /// nothing is listed.
    files_from: Option<String>,
    /// Bounds the bytes fetched ahead and not yet taken (in KiB permits).
    budget: Arc<Semaphore>,
}

impl ObjectTree {
    /// The objects under `remote`'s prefix.
    pub fn new(remote: Arc<Remote>) -> Self {
        Self {
            remote,
            files_from: None,
            budget: Arc::new(Semaphore::new((PREFETCH_BUDGET >> 10) as usize)),
        }
    }

    /// The input named by `remote`: the prefix, or, when an object has exactly that key,
    /// its parent with that one object (as [`crate::LocalTree::for_path`] for a file).
    pub fn for_remote(remote: Arc<Remote>) -> Result<(Self, Option<(String, u64)>)> {
        let key = remote.key("");
        if key.as_ref().is_empty() {
            return Ok((Self::new(remote), None));
        }
        // A prefix with objects below is a directory (asked first: some S3 servers over
        // a file system answer HEAD of a "directory" with an error).
        let store = remote.store.clone();
        let below = remote.run(async {
            let mut listed = store.list(Some(&key));
            listed.next().await.transpose()
        });
        match below {
            Ok(Some(_)) => return Ok((Self::new(remote), None)),
            Ok(None) => {}
            Err(e) => return Err(remote.error("listing", "", &e)),
        }
        let head = remote.run(async { remote.store.head(&key).await });
        match head {
            Ok(meta) => {
                let name = key.filename().unwrap_or_default().to_string();
                let parent: Vec<_> = key.parts().collect();
                let parent = object_store::path::Path::from_iter(
                    parent[..parent.len().saturating_sub(1)].iter().cloned(),
                );
                let mut up = remote.child("");
                up.prefix = parent;
                Ok((Self::new(Arc::new(up)), Some((name, meta.size))))
            }
            Err(e) if is_not_found(&e) => Ok((Self::new(remote), None)),
            Err(e) => Err(remote.error("examining", "", &e)),
        }
    }

    /// Only the listed keys, relative to the prefix, each line `KEY<TAB>SIZE` (see
    /// [`crate::files_from`]): the prefix is not listed at all, so the tasks of a split run
    /// share one listing instead of each making its own.
    pub fn with_files(mut self, list: String) -> Self {
        self.files_from = Some(list);
        self
    }

    /// Every object under the prefix but shardsmith's temporary and state entries,
    /// sorted.
    fn list_all(&self) -> Result<InputListing> {
        self.list_prefix(false)
    }

    /// Every object under the prefix, sorted; shardsmith's temporary and state entries
    /// only with `temp`.
    fn list_prefix(&self, temp: bool) -> Result<InputListing> {
        let remote = &self.remote;
        let prefix = remote.key("");
        let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
        let mut listing = InputListing::default();
        // One page at a time: only the names (and sizes) are kept, ~40 bytes plus the
        // name's length per object.
        let result: Result<(), object_store::Error> = remote.run(async {
            let mut pages = remote.store.list(prefix.as_ref());
            while let Some(meta) = pages.next().await {
                let meta = meta?;
                let Some(rel) = remote.rel_of(&meta.location) else {
                    continue;
                };
                if rel.is_empty() || (!temp && rel.split('/').any(|p| p.starts_with(TEMP_PREFIX))) {
                    continue;
                }
                listing.files.push(ListedFile {
                    rel,
                    size: meta.size,
                });
            }
            Ok(())
        });
        result.map_err(|e| remote.error("listing", "", &e))?;
        listing.files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        Ok(listing)
    }

    /// Leaves out a shardsmith `manifest.json` and its `SHA256SUMS` (as the local walk
    /// does): packing a dataset again must not pack its manifest. One ranged GET of
    /// 512 bytes per `manifest.json` listed.
    fn drop_own_metadata(&self, files: &mut Vec<ListedFile>) {
        let base = |rel: &str| rel.rsplit('/').next().unwrap_or(rel).to_string();
        let dir = |rel: &str| rel.rsplit_once('/').map_or("", |(d, _)| d).to_string();
        let own: std::collections::HashSet<String> = files
            .iter()
            .filter(|f| base(&f.rel) == MANIFEST_FILE)
            .filter(|f| {
                let key = self.remote.key(&f.rel);
                let head = self
                    .remote
                    .run(self.remote.store.get_range(&key, 0..f.size.min(512)));
                head.is_ok_and(|h| h.windows(20).any(|w| w == b"\"tool\": \"shardsmith\""))
            })
            .map(|f| dir(&f.rel))
            .collect();
        if own.is_empty() {
            return;
        }
        files.retain(|f| {
            let name = base(&f.rel);
            !((name == MANIFEST_FILE || name == SUMS_FILE) && own.contains(&dir(&f.rel)))
        });
    }

    /// The first `n` bytes of object `rel`, `n` at most its size: one ranged GET.
    pub fn head(&self, rel: &str, n: u64) -> io::Result<Vec<u8>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let key = self.remote.key(rel);
        let store = self.remote.store.clone();
        self.remote
            .run(async move { store.get_range(&key, 0..n).await })
            .map(|b| b.to_vec())
            .map_err(|e| io::Error::from(read_error(&e, &self.remote)))
    }

    /// The location this tree lists.
    pub fn remote(&self) -> &Arc<Remote> {
        &self.remote
    }
}

fn read_error(e: &object_store::Error, remote: &Remote) -> ReadError {
    if is_not_found(e) {
        ReadError::Vanished
    } else {
        ReadError::Unreadable(remote.explain(e))
    }
}

/// Fetches `rel` whole and checks its size.
async fn fetch(remote: &Remote, rel: &str, size: u64) -> Result<Bytes, ReadError> {
    let key = remote.key(rel);
    let got = remote
        .store
        .get(&key)
        .await
        .map_err(|e| read_error(&e, remote))?;
    let bytes = got.bytes().await.map_err(|e| read_error(&e, remote))?;
    if bytes.len() as u64 != size {
        return Err(ReadError::Changed {
            read: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

impl InputSource for ObjectTree {
    fn describe(&self) -> String {
        self.remote.url("")
    }

    fn display(&self, rel: &str) -> String {
        self.remote.url(rel)
    }

    fn list(&self) -> Result<InputListing> {
        if let Some(list) = &self.files_from {
            let given = files_from::sorted(list);
            if let Some(first) = given.iter().find(|g| g.size.is_none()) {
                return Err(Error::Location {
                    url: self.remote.url(""),
                    message: format!(
                        "--files-from gives no size for `{}`: for an object store input every line is KEY<TAB>SIZE (`shardsmith list {}` writes such a list), so that nothing has to be asked of the store",
                        first.rel,
                        self.remote.url("")
                    ),
                });
            }
            return Ok(files_from::listing(&given, &|_| {
                Err(files_from::LeftOut::NoSize)
            }));
        }
        let mut listing = self.list_all()?;
        self.drop_own_metadata(&mut listing.files);
        Ok(listing)
    }

    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        let bytes = self.remote.run(fetch(&self.remote, rel, size))?;
        buf.extend_from_slice(&bytes);
        Ok(())
    }

    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
        self.open_at(rel, 0)
    }

    fn open_at(&self, rel: &str, offset: u64) -> Result<Box<dyn Read + Send>, ReadError> {
        let key = self.remote.key(rel);
        let meta = self
            .remote
            .run(async { self.remote.store.head(&key).await })
            .map_err(|e| read_error(&e, &self.remote))?;
        if offset > meta.size {
            return Err(ReadError::Changed { read: meta.size });
        }
        Ok(Box::new(RangedReader::new(
            self.remote.clone(),
            rel,
            offset..meta.size,
        )))
    }

    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
        let key = self.remote.key(rel);
        let meta = self
            .remote
            .run(async { self.remote.store.head(&key).await })
            .map_err(|e| read_error(&e, &self.remote))?;
        Ok(Arc::new(ObjectRange {
            remote: self.remote.clone(),
            key,
            len: meta.size,
        }))
    }

    fn fetches_ahead(&self) -> bool {
        true
    }

    fn prefetch(&self, files: Vec<ListedFile>) -> Option<Box<dyn Prefetched + '_>> {
        if files.is_empty() {
            return None;
        }
        let depth = self.remote.io_concurrency();
        let (tx, rx) = mpsc::channel(depth);
        let remote = self.remote.clone();
        let budget = self.budget.clone();
        let task = runtime().spawn(async move {
            let mut fetched = stream::iter(files)
                .map(|file| {
                    let remote = remote.clone();
                    let budget = budget.clone();
                    async move {
                        let kib =
                            ((file.size >> 10) as u32).clamp(1, (PREFETCH_BUDGET >> 10) as u32);
                        let held = budget.acquire_many_owned(kib).await.expect("never closed");
                        let permit = remote.limit.clone().acquire_owned().await;
                        let result = fetch(&remote, &file.rel, file.size).await;
                        drop(permit);
                        (file.rel, result, held)
                    }
                })
                .buffered(depth);
            while let Some(item) = fetched.next().await {
                if tx.send(item).await.is_err() {
                    break;
                }
            }
        });
        Some(Box::new(Ahead { rx, task }))
    }
}

type Fetched = (String, Result<Bytes, ReadError>, OwnedSemaphorePermit);

/// Objects fetched ahead, in order.
struct Ahead {
    rx: mpsc::Receiver<Fetched>,
    task: tokio::task::JoinHandle<()>,
}

impl Prefetched for Ahead {
    fn take(&mut self, rel: &str, _size: u64, buf: &mut Vec<u8>) -> Option<Result<(), ReadError>> {
        let (got, result, held) = self.rx.blocking_recv()?;
        if got != rel {
            self.task.abort();
            return None;
        }
        let result = result.map(|bytes| buf.extend_from_slice(&bytes));
        drop(held);
        Some(result)
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A byte range of one object, read as parallel ranged GETs handed out in order. The
/// GETs run as tasks on the runtime, so they progress while the reader's thread hashes
/// and writes what arrived. Memory: at most [`RANGES_AHEAD`] ranges per reader and
/// [`RANGED_BUDGET`] bytes across all readers (each reader keeps at least one range).
struct RangedReader {
    remote: Arc<Remote>,
    key: object_store::path::Path,
    /// Start of the next range to request.
    next: u64,
    end: u64,
    ahead: VecDeque<Part>,
    current: Bytes,
    /// The budget of the range being handed out.
    held: Option<OwnedSemaphorePermit>,
}

type Part = tokio::task::JoinHandle<io::Result<(Bytes, OwnedSemaphorePermit)>>;

/// The shared budget of ranged reads: one permit per [`RANGE`] fetched and not yet read.
fn ranged_budget() -> &'static Arc<Semaphore> {
    static BUDGET: OnceLock<Arc<Semaphore>> = OnceLock::new();
    BUDGET.get_or_init(|| Arc::new(Semaphore::new((RANGED_BUDGET / RANGE) as usize)))
}

impl RangedReader {
    fn new(remote: Arc<Remote>, rel: &str, range: Range<u64>) -> Self {
        Self {
            key: remote.key(rel),
            remote,
            next: range.start,
            end: range.end,
            ahead: VecDeque::new(),
            current: Bytes::new(),
            held: None,
        }
    }

    /// Requests the next ranges, as many as the per-reader and shared budgets allow,
    /// waiting for the budget only when nothing of this reader is in flight. Ranges are
    /// admitted in order, so a reader never holds budget for a later range while
    /// waiting for an earlier one.
    fn fill(&mut self) {
        while self.ahead.len() < RANGES_AHEAD && self.next < self.end {
            let budget = ranged_budget().clone();
            let permit = if self.ahead.is_empty() {
                runtime()
                    .block_on(budget.acquire_owned())
                    .expect("never closed")
            } else {
                match budget.try_acquire_owned() {
                    Ok(permit) => permit,
                    Err(_) => break,
                }
            };
            let (start, stop) = (self.next, (self.next + RANGE).min(self.end));
            self.next = stop;
            let remote = self.remote.clone();
            let key = self.key.clone();
            self.ahead.push_back(runtime().spawn(async move {
                let _request = remote.limit.clone().acquire_owned().await;
                let bytes = remote
                    .store
                    .get_range(&key, start..stop)
                    .await
                    .map_err(|e| io::Error::from(read_error(&e, &remote)))?;
                Ok((bytes, permit))
            }));
        }
    }
}

impl Read for RangedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            self.held = None;
            self.fill();
            let Some(part) = self.ahead.pop_front() else {
                return Ok(0);
            };
            let (bytes, permit) = runtime().block_on(part).map_err(io::Error::other)??;
            self.current = bytes;
            self.held = Some(permit);
            self.fill();
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

impl Drop for RangedReader {
    fn drop(&mut self) {
        for part in &self.ahead {
            part.abort();
        }
    }
}

/// Random access to one object by ranged GETs.
struct ObjectRange {
    remote: Arc<Remote>,
    key: object_store::path::Path,
    len: u64,
}

impl RangeRead for ObjectRange {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let end = (offset + buf.len() as u64).min(self.len);
        let bytes = self
            .remote
            .run(self.remote.store.get_range(&self.key, offset..end))
            .map_err(|e| io::Error::from(read_error(&e, &self.remote)))?;
        buf[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }
}

impl From<Error> for ReadError {
    fn from(e: Error) -> Self {
        ReadError::Unreadable(e.to_string())
    }
}

/// An object store prefix as a listed tree: what `verify` checks against its manifest
/// ([`shardsmith_manifest::verify::verify_listed`]) and `audit` surveys
/// ([`shardsmith_manifest::ListedTree`]).
impl shardsmith_manifest::ListedTree for ObjectTree {
    fn display(&self) -> String {
        self.remote.url("")
    }

    fn files(&self) -> shardsmith_manifest::Result<Vec<(String, u64)>> {
        // The dataset's own manifest and SHA256SUMS only: a merged dataset lists its
        // parts' manifests among its files. Leftovers of shardsmith runs are listed, as
        // the local walk finds them.
        let listing = self
            .list_prefix(true)
            .map_err(|e| shardsmith_manifest::Error::Source {
                kind: e.kind(),
                location: e.path().unwrap_or_else(|| self.remote.url("")),
                message: e.to_string(),
            })?;
        Ok(listing
            .files
            .into_iter()
            .filter(|f| f.rel != MANIFEST_FILE && f.rel != SUMS_FILE)
            .map(|f| (f.rel, f.size))
            .collect())
    }

    fn read_small(&self, rel: &str) -> shardsmith_manifest::Result<Option<Vec<u8>>> {
        self.remote.get_small(rel).map_err(|e| {
            let e = self.remote.error("reading", rel, &e);
            shardsmith_manifest::Error::Source {
                kind: e.kind(),
                location: e.path().unwrap_or_else(|| self.remote.url(rel)),
                message: e.to_string(),
            }
        })
    }

    fn open(&self, rel: &str) -> io::Result<Box<dyn Read + Send>> {
        InputSource::open(self, rel).map_err(io::Error::from)
    }

    /// One ranged request for the first `n` bytes.
    fn head(&self, rel: &str, n: u64) -> io::Result<Vec<u8>> {
        ObjectTree::head(self, rel, n)
    }
}
