//! Reading files once: SHA-256, chunk CRCs and the format inspector in the same pass,
//! files in parallel. Used by `shardsmith manifest` and `shardsmith verify`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc;

use rayon::prelude::*;

use crate::walk::{self, rel_string};
use crate::{
    DEFAULT_CHUNK_SIZE, Digester, Error, FileContext, FileDigest, FileEntry, Inspection, Inspector,
    InspectorFactory, MANIFEST_FILE, Manifest, ManifestKind, Result, SUMS_FILE, Skipped,
    TEMP_PREFIX,
};

/// Read block size: large enough for few system calls, small enough that SHA-256 and
/// CRC-32 read the block from cache right after the copy.
pub const READ_BLOCK: usize = 256 * 1024;

/// Files at least this large are read by a helper thread, which also feeds the format
/// inspector (CRC-32s, zero scan), while the calling thread computes the SHA-256 and
/// chunk CRCs: on two cores the inspector's work and the copy from the page cache (or
/// the disk wait) overlap the hashing. Smaller files are read inline: a thread per
/// small file costs more than it saves.
pub const OVERLAP_MIN: u64 = 8 << 20;
/// Block size and number of blocks in flight when reading on a helper thread.
const OVERLAP_BLOCK: usize = 1 << 20;
const OVERLAP_BUFFERS: usize = 4;

/// What reading one file gives: its digest and, if an inspector took it, the inspection.
pub type FileRead = io::Result<(FileDigest, Option<Inspection>)>;

/// Reads `path` once, feeding the digest and the inspector chosen from its first block.
/// With `chunk_list` (writing a manifest), a file of at least the chunk-list threshold
/// also gets the SHA-256 of each chunk, in the same read. `progress` is called with the
/// size of every block read. Large files are read sequentially by a helper thread into
/// a few reused buffers (bounded memory).
pub fn digest_file(
    path: &Path,
    ctx: &FileContext<'_>,
    chunk_size: u64,
    chunk_list: bool,
    inspectors: &dyn InspectorFactory,
    progress: &(dyn Fn(u64) + Sync),
) -> FileRead {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut buf = vec![0u8; READ_BLOCK];
    let mut digester = match chunk_list {
        true => Digester::expecting(chunk_size, crate::ExpectedSize::AtMost(len)),
        false => Digester::new(chunk_size),
    };
    let head = fill(&mut file, &mut buf)?;
    let mut inspector = inspectors.inspector_for(ctx, &buf[..head]);
    let mut consume = |data: &[u8], inspector: &mut Option<Box<dyn Inspector>>| {
        digester.update(data);
        if let Some(inspector) = inspector.as_mut() {
            inspector.update(data);
        }
        progress(data.len() as u64);
    };
    if head > 0 {
        consume(&buf[..head], &mut inspector);
    }
    if head == READ_BLOCK && len >= OVERLAP_MIN {
        inspector = read_overlapped(&mut file, inspector, &mut |data| {
            consume(data, &mut None);
        })?;
    } else if head == READ_BLOCK {
        loop {
            let n = read_retrying(&mut file, &mut buf)?;
            if n == 0 {
                break;
            }
            consume(&buf[..n], &mut inspector);
        }
    }
    Ok((digester.finish(), inspector.map(|i| i.finish())))
}

/// Reads the rest of `file` on a helper thread that also feeds `inspector`, handing
/// each buffer to `consume` afterwards, in order, on this thread. Returns the inspector.
fn read_overlapped(
    file: &mut File,
    inspector: Option<Box<dyn Inspector>>,
    consume: &mut dyn FnMut(&[u8]),
) -> io::Result<Option<Box<dyn Inspector>>> {
    let (full_tx, full_rx) = mpsc::sync_channel::<io::Result<(Vec<u8>, usize)>>(OVERLAP_BUFFERS);
    let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(OVERLAP_BUFFERS);
    for _ in 0..OVERLAP_BUFFERS {
        free_tx
            .send(vec![0u8; OVERLAP_BLOCK])
            .expect("the channel has room for every buffer");
    }
    std::thread::scope(|scope| {
        let helper = scope.spawn(move || {
            let mut inspector = inspector;
            while let Ok(mut buf) = free_rx.recv() {
                let read = fill(file, &mut buf);
                if let (Ok(n), Some(inspector)) = (&read, inspector.as_mut()) {
                    inspector.update(&buf[..*n]);
                }
                let done = !matches!(read, Ok(n) if n > 0);
                if full_tx.send(read.map(|n| (buf, n))).is_err() || done {
                    break;
                }
            }
            inspector
        });
        // Both ends are owned here, so an early return (a read error) drops them and
        // the helper thread ends instead of waiting forever.
        let (full_rx, free_tx) = (full_rx, free_tx);
        for message in full_rx.iter() {
            let (buf, n) = message?;
            if n == 0 {
                break;
            }
            consume(&buf[..n]);
            // The helper may have ended at the end of the file; a refused buffer is fine.
            let _ = free_tx.send(buf);
        }
        drop(free_tx);
        helper
            .join()
            .map_err(|_| io::Error::other("the reading thread failed (an inspector panicked)"))
    })
}

fn read_retrying(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Reads until `buf` is full or the file ends.
fn fill(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match read_retrying(file, &mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// True for names the dataset never contains: the manifest, the checksum list and
/// shardsmith's temporary and state entries.
pub fn is_reserved(rel: &Path) -> bool {
    if rel == Path::new(MANIFEST_FILE) || rel == Path::new(SUMS_FILE) {
        return true;
    }
    rel.components().any(|c| {
        c.as_os_str()
            .as_encoded_bytes()
            .starts_with(TEMP_PREFIX.as_bytes())
    })
}

/// The manifest of an existing directory and what was noticed while making it.
#[derive(Debug)]
pub struct DirectoryScan {
    /// The manifest (sealed).
    pub manifest: Manifest,
    /// Inspector findings (a damaged shard is still hashed and listed).
    pub findings: Vec<crate::Finding>,
}

/// Writes the manifest of directory `dir` as `shardsmith manifest` does: to `output`
/// when given (then no `SHA256SUMS`), else `DIR/SHA256SUMS` and then `DIR/manifest.json`.
/// Each file is written to a temporary file beside it (under [`TEMP_PREFIX`]), synced
/// and renamed over its name, so a reader never sees half of it. Returns the path of
/// the manifest written. Whether an existing manifest may be replaced is the caller's
/// decision.
pub fn write_directory_manifest(
    dir: &Path,
    output: Option<&Path>,
    manifest: &Manifest,
) -> Result<std::path::PathBuf> {
    match output {
        Some(target) => write_synced(target, &manifest.to_json_bytes())?,
        None => crate::commit(&manifest.files, &manifest.to_json_bytes(), |name, bytes| {
            write_synced(&dir.join(name), bytes)
        })?,
    }
    Ok(output.map_or_else(|| dir.join(MANIFEST_FILE), Path::to_path_buf))
}

/// Writes `bytes` to `path` through a synced temporary file beside it (under
/// [`TEMP_PREFIX`]) renamed over it, so a reader never sees half of it; the temporary
/// file is removed when any step fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!("{TEMP_PREFIX}tmp-{name}"));
    let written = File::create(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// [`write_atomic`], its error naming `path`.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes).map_err(|e| Error::io("writing", path, e))
}

/// Hashes every file under `root` (in parallel, each read once) into a `directory`
/// manifest. Files the walk cannot include are listed in `skipped`.
pub fn scan_directory(
    root: &Path,
    inspectors: &dyn InspectorFactory,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<DirectoryScan> {
    let walked = walk::walk(root, &|rel, _| !is_reserved(rel))?;
    let mut skipped: Vec<Skipped> = walked
        .skipped
        .iter()
        .map(|s| Skipped {
            path: s.rel.to_string_lossy().into_owned(),
            reason: s.reason.clone(),
        })
        .collect();
    let mut files = Vec::with_capacity(walked.files.len());
    for f in &walked.files {
        let rel = rel_string(&f.rel).ok_or_else(|| Error::NonUtf8Name {
            path: f.rel.clone(),
        })?;
        files.push((rel, f.size));
    }
    progress_total(files.iter().map(|f| f.1).sum());
    let sizes: BTreeMap<String, u64> = files.iter().cloned().collect();
    let results: Vec<(String, FileRead)> = files
        .into_par_iter()
        .map(|(rel, _)| {
            let ctx = FileContext {
                root,
                path: &rel,
                entry: None,
                manifest: None,
            };
            let result = digest_file(
                &root.join(&rel),
                &ctx,
                DEFAULT_CHUNK_SIZE,
                true,
                inspectors,
                progress,
            );
            (rel, result)
        })
        .collect();
    let mut entries = Vec::new();
    let mut findings = Vec::new();
    let mut inspections = BTreeMap::new();
    for (rel, result) in results {
        match result {
            Ok((digest, inspection)) => {
                let mut entry = FileEntry::new(rel.clone(), &digest);
                if let Some(mut inspection) = inspection {
                    let clean = !inspection.findings.iter().any(crate::Finding::is_error);
                    entry.format = Some(inspection.format.clone());
                    if clean {
                        entry.samples = inspection.samples;
                        entry.first_key = inspection.first_key.clone();
                        entry.last_key = inspection.last_key.clone();
                    }
                    findings.append(&mut inspection.findings);
                    inspections.insert(rel, inspection);
                }
                entries.push(entry);
            }
            Err(e) => skipped.push(Skipped {
                path: rel,
                reason: format!("cannot be read: {e}"),
            }),
        }
    }
    findings.extend(inspectors.check_layout(root, &sizes, &inspections, None));
    skipped.sort();
    let mut manifest = Manifest::new(ManifestKind::Directory, DEFAULT_CHUNK_SIZE, entries);
    manifest.skipped = skipped;
    manifest.seal();
    Ok(DirectoryScan { manifest, findings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoInspection;
    use std::sync::{Arc, Mutex};

    /// Records every byte it is given, to prove order and completeness.
    struct Record(Arc<Mutex<Vec<u8>>>);
    impl Inspector for Record {
        fn update(&mut self, data: &[u8]) {
            self.0.lock().unwrap().extend_from_slice(data);
        }
        fn finish(self: Box<Self>) -> Inspection {
            Inspection::default()
        }
    }
    struct RecordAll(Arc<Mutex<Vec<u8>>>);
    impl InspectorFactory for RecordAll {
        fn inspector_for(&self, _: &FileContext<'_>, _: &[u8]) -> Option<Box<dyn Inspector>> {
            Some(Box::new(Record(self.0.clone())))
        }
    }

    #[test]
    fn large_files_read_on_a_helper_thread_give_the_same_digest_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(OVERLAP_MIN as usize * 2 + 12_345))
            .map(|i| (i * 31 % 253) as u8)
            .collect();
        let path = dir.path().join("big.bin");
        std::fs::write(&path, &data).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let ctx = FileContext {
            root: dir.path(),
            path: "big.bin",
            entry: None,
            manifest: None,
        };
        let total = std::sync::atomic::AtomicU64::new(0);
        let (digest, _) = digest_file(
            &path,
            &ctx,
            DEFAULT_CHUNK_SIZE,
            true,
            &RecordAll(seen.clone()),
            &|n| {
                total.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            },
        )
        .unwrap();
        let mut inline = Digester::new(DEFAULT_CHUNK_SIZE);
        inline.update(&data);
        assert_eq!(digest, inline.finish());
        assert!(
            *seen.lock().unwrap() == data,
            "inspector saw every byte in order"
        );
        assert_eq!(total.into_inner(), data.len() as u64);
    }

    #[test]
    fn directory_manifest_lists_files_in_path_order_and_skips_reserved() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.bin"), vec![7u8; 3 << 20]).unwrap();
        std::fs::write(dir.path().join("a.bin"), b"abc").unwrap();
        std::fs::write(dir.path().join(MANIFEST_FILE), b"{}").unwrap();
        std::fs::write(dir.path().join(".shardsmith-tmp-x"), b"junk").unwrap();
        let scan = scan_directory(dir.path(), &NoInspection, &|_| {}, &|_| {}).unwrap();
        let m = scan.manifest;
        let paths: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.bin", "sub/b.bin"]);
        assert_eq!(
            m.files[0].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(m.files[1].chunk_crc32.len(), 3 * 8);
        assert_eq!(m.totals.bytes, 3 + (3 << 20));
        assert_eq!(m.kind, ManifestKind::Directory);
        assert_eq!(
            crate::root_digest(&serde_json::to_value(&m).unwrap()),
            m.root_sha256
        );
    }

    #[test]
    fn directory_manifest_is_written_whole_with_its_sums_or_alone_to_an_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), b"abc").unwrap();
        let scan = scan_directory(dir.path(), &NoInspection, &|_| {}, &|_| {}).unwrap();
        let written = write_directory_manifest(dir.path(), None, &scan.manifest).unwrap();
        assert_eq!(written, dir.path().join(MANIFEST_FILE));
        assert_eq!(
            std::fs::read(&written).unwrap(),
            scan.manifest.to_json_bytes()
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(SUMS_FILE)).unwrap(),
            crate::sums::render(&scan.manifest.files)
        );
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("m.json");
        let written = write_directory_manifest(dir.path(), Some(&target), &scan.manifest).unwrap();
        assert_eq!(written, target);
        let names: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["m.json"], "no SHA256SUMS, no temporary file left");
        let missing = out.path().join("nosuch/m.json");
        let err = write_directory_manifest(dir.path(), Some(&missing), &scan.manifest).unwrap_err();
        assert!(err.to_string().starts_with("writing `"), "{err}");
    }
}
