//! Staging by chunks, local to local: a sparse file of just over 1 GiB, whose manifest
//! (made as `shardsmith manifest` makes it) lists its 64 MiB chunks, read through a
//! source that counts (and may spoil) what it hands out.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shardsmith_manifest::{MANIFEST_FILE, NoInspection};

use super::{Mismatch, StageOptions, StageReport, stage};
use crate::{
    InputListing, InputSource, LocalDir, LocalTree, RangeRead, ReadError, Result as StoreResult,
};

const CHUNK: u64 = 64 << 20;
/// 1 GiB and 5 MiB: 17 chunks, the last one short.
const BIG: u64 = (1 << 30) + (5 << 20);
const MARKS: [u64; 4] = [0, CHUNK - 3, 9 * CHUNK + 12_345, BIG - 10];

/// A dataset with a sparse `model.bin` of `BIG` bytes (a few marks written into it)
/// and a small file, and its manifest.
fn dataset() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), b"{\"layers\": 2}\n").unwrap();
    let mut file = std::fs::File::create(dir.path().join("model.bin")).unwrap();
    file.set_len(BIG).unwrap();
    for (i, at) in MARKS.into_iter().enumerate() {
        file.seek(SeekFrom::Start(at)).unwrap();
        file.write_all(format!("mark {i}").as_bytes()).unwrap();
    }
    drop(file);
    let scan =
        shardsmith_manifest::scan::scan_directory(dir.path(), &NoInspection, &|_| {}, &|_| {})
            .unwrap();
    let chunks = scan.manifest.files[1]
        .chunks
        .as_ref()
        .expect("a chunk list");
    assert_eq!(chunks.sha256.len(), 17);
    shardsmith_manifest::scan::write_directory_manifest(dir.path(), None, &scan.manifest).unwrap();
    dir
}

/// Flips one bit of the byte at `at` of `path`.
fn flip(path: &Path, at: u64) {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(at)).unwrap();
    file.read_exact(&mut byte).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[byte[0] ^ 0x10]).unwrap();
}

/// What the source handed out: ranged reads per chunk index, bytes streamed (but the
/// manifest's), and the most ranged reads at once.
#[derive(Default)]
struct Counts {
    chunks: Mutex<BTreeMap<u64, usize>>,
    streamed: AtomicU64,
    reading: AtomicUsize,
    most: AtomicUsize,
}

/// A local tree that counts what it hands out and, when `spoil` is set, hands out the
/// byte at that offset flipped on its first read only (a fault in transit).
struct Counting {
    tree: LocalTree,
    counts: Arc<Counts>,
    spoil: Option<u64>,
    spoiled: Arc<AtomicUsize>,
}

impl Counting {
    fn new(root: &Path, spoil: Option<u64>) -> Self {
        Self {
            tree: LocalTree::new(root),
            counts: Arc::default(),
            spoil,
            spoiled: Arc::default(),
        }
    }

    /// Flips the spoiled byte in `buf` (holding the bytes from `offset`) the first time.
    fn spoil(spoil: Option<u64>, spoiled: &AtomicUsize, offset: u64, buf: &mut [u8]) {
        if let Some(at) = spoil
            && (offset..offset + buf.len() as u64).contains(&at)
            && spoiled.fetch_add(1, Ordering::SeqCst) == 0
        {
            buf[(at - offset) as usize] ^= 0x10;
        }
    }
}

struct CountingRange {
    inner: Arc<dyn RangeRead>,
    counts: Arc<Counts>,
    spoil: Option<u64>,
    spoiled: Arc<AtomicUsize>,
}

impl RangeRead for CountingRange {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let now = self.counts.reading.fetch_add(1, Ordering::SeqCst) + 1;
        self.counts.most.fetch_max(now, Ordering::SeqCst);
        if offset.is_multiple_of(CHUNK) {
            *self
                .counts
                .chunks
                .lock()
                .unwrap()
                .entry(offset / CHUNK)
                .or_default() += 1;
        }
        let n = self.inner.read_at(offset, buf);
        self.counts.reading.fetch_sub(1, Ordering::SeqCst);
        let n = n?;
        Counting::spoil(self.spoil, &self.spoiled, offset, &mut buf[..n]);
        Ok(n)
    }
}

/// A stream that counts its bytes and spoils as [`Counting`] does.
struct CountingStream {
    inner: Box<dyn Read + Send>,
    at: u64,
    counts: Arc<Counts>,
    spoil: Option<u64>,
    spoiled: Arc<AtomicUsize>,
}

impl Read for CountingStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        Counting::spoil(self.spoil, &self.spoiled, self.at, &mut buf[..n]);
        self.at += n as u64;
        self.counts.streamed.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
}

impl InputSource for Counting {
    fn describe(&self) -> String {
        self.tree.describe()
    }
    fn list(&self) -> StoreResult<InputListing> {
        self.tree.list()
    }
    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        self.tree.read_into(rel, size, buf)
    }
    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
        let inner = self.tree.open(rel)?;
        if rel == MANIFEST_FILE {
            return Ok(inner);
        }
        let big = rel == "model.bin";
        Ok(Box::new(CountingStream {
            inner,
            at: 0,
            counts: self.counts.clone(),
            spoil: self.spoil.filter(|_| big),
            spoiled: self.spoiled.clone(),
        }))
    }
    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
        Ok(Arc::new(CountingRange {
            inner: self.tree.open_ranged(rel)?,
            counts: self.counts.clone(),
            spoil: self.spoil.filter(|_| rel == "model.bin"),
            spoiled: self.spoiled.clone(),
        }))
    }
}

/// Options with `concurrency` and room for `buffers` chunks.
fn options(concurrency: usize, buffers: u64) -> StageOptions {
    StageOptions {
        trust_existing: false,
        concurrency,
        accept_unfinished: false,
        chunk_memory: buffers * CHUNK,
        chunks_from_files: true,
    }
}

/// Stages `src` (read through `source`) into `dst`; the report and the bytes the
/// progress callback got.
fn run(
    source: &Counting,
    dst: &Path,
    existing: &dyn InputSource,
    o: &StageOptions,
) -> (StageReport, u64) {
    let sink = LocalDir::create(dst).unwrap();
    let shown = AtomicU64::new(0);
    let report = stage(source, &sink, existing, o, &|n| {
        shown.fetch_add(n, Ordering::Relaxed);
    })
    .unwrap();
    (report, shown.into_inner())
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// True when both files hold the same bytes.
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (mut a, mut b) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    let (mut x, mut y) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    loop {
        let n = a.read(&mut x).unwrap();
        if n == 0 {
            return b.read(&mut y).unwrap() == 0;
        }
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return false;
        }
    }
}

#[test]
fn a_damaged_chunk_stops_the_file_there_and_is_named_by_its_bytes() {
    let src = dataset();
    flip(&src.path().join("model.bin"), 3 * CHUNK + 777);
    let source = Counting::new(src.path(), None);
    let dst = tempfile::tempdir().unwrap();
    let target = dst.path().join("d");
    let (report, _) = run(&source, &target, &LocalTree::new(&target), &options(2, 2));
    assert!(!report.complete);
    let [
        Mismatch {
            path,
            reason,
            range,
        },
    ] = report.mismatches.as_slice()
    else {
        panic!("{:?}", report.mismatches)
    };
    assert_eq!(path, "model.bin");
    assert_eq!(*range, Some((3 * CHUNK, 4 * CHUNK)));
    assert!(
        reason.contains(&format!(
            "chunk 3 of 17 (bytes {}..{})",
            3 * CHUNK,
            4 * CHUNK
        )) && reason.contains("not fetched"),
        "{reason}"
    );
    assert_eq!(
        names(&target),
        ["config.json"],
        "no copy of model.bin, no temporary file, no manifest"
    );
    let reads = source.counts.chunks.lock().unwrap().clone();
    assert_eq!(reads.get(&3), Some(&2), "the bad chunk is read twice");
    assert!(
        reads.keys().all(|&i| i <= 3 + 2),
        "at most the two chunk buffers' worth after the bad chunk: {reads:?}"
    );
    assert_eq!(
        source.counts.streamed.load(Ordering::SeqCst),
        14,
        "only the small file is streamed"
    );
    assert!(source.counts.most.load(Ordering::SeqCst) <= 2);
}

#[test]
fn a_clean_copy_is_checked_by_chunks_identical_and_sealed_and_kept_on_a_rerun() {
    let src = dataset();
    let source = Counting::new(src.path(), None);
    let dst = tempfile::tempdir().unwrap();
    let target = dst.path().join("d");
    let (report, shown) = run(&source, &target, &LocalTree::new(&target), &options(4, 3));
    assert!(report.complete, "{:?}", report.mismatches);
    assert_eq!((report.copied, report.chunked, report.kept), (2, 1, 0));
    assert_eq!(report.chunk_size, CHUNK);
    assert_eq!(shown, BIG + 14, "progress got every byte once");
    let reads = source.counts.chunks.lock().unwrap().clone();
    assert_eq!(reads.len(), 17, "{reads:?}");
    assert!(reads.values().all(|&n| n == 1), "{reads:?}");
    assert_eq!(
        source.counts.streamed.load(Ordering::SeqCst),
        14,
        "only the small file is streamed"
    );
    assert!(source.counts.most.load(Ordering::SeqCst) <= 3);
    assert!(same_bytes(
        &src.path().join("model.bin"),
        &target.join("model.bin")
    ));
    assert_eq!(
        std::fs::read(src.path().join(MANIFEST_FILE)).unwrap(),
        std::fs::read(target.join(MANIFEST_FILE)).unwrap()
    );
    assert_eq!(
        names(&target),
        ["SHA256SUMS", "config.json", "manifest.json", "model.bin"]
    );

    // A re-run checks what is there by its chunks and keeps it; a chunk damaged at
    // the destination sends the file to be copied again.
    std::fs::remove_file(target.join(MANIFEST_FILE)).unwrap();
    let existing = Counting::new(&target, None);
    let (again, _) = run(&source, &target, &existing, &options(4, 3));
    assert!(again.complete);
    assert_eq!((again.kept, again.copied), (2, 0));
    assert_eq!(existing.counts.chunks.lock().unwrap().len(), 17);
    assert_eq!(existing.counts.streamed.load(Ordering::SeqCst), 14);
    std::fs::remove_file(target.join(MANIFEST_FILE)).unwrap();
    flip(&target.join("model.bin"), 16 * CHUNK + 5);
    let (fixed, _) = run(&source, &target, &LocalTree::new(&target), &options(4, 3));
    assert!(fixed.complete);
    assert_eq!((fixed.kept, fixed.copied, fixed.chunked), (1, 1, 1));
    assert!(same_bytes(
        &src.path().join("model.bin"),
        &target.join("model.bin")
    ));
}

#[test]
fn a_chunk_spoiled_in_transit_once_is_fetched_again() {
    let src = dataset();
    let source = Counting::new(src.path(), Some(MARKS[2] + 2));
    let dst = tempfile::tempdir().unwrap();
    let target = dst.path().join("d");
    let (report, _) = run(&source, &target, &LocalTree::new(&target), &options(2, 2));
    assert!(report.complete, "{:?}", report.mismatches);
    assert_eq!(
        source.spoiled.load(Ordering::SeqCst),
        2,
        "spoiled once, then read again"
    );
    assert_eq!(source.counts.chunks.lock().unwrap().get(&9), Some(&2));
    assert!(same_bytes(
        &src.path().join("model.bin"),
        &target.join("model.bin")
    ));
}
