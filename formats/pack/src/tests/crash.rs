//! Runs killed between commits (a sink that fails after N renames) resume to the bytes
//! of an uninterrupted run.

use super::*;

/// A sink that fails shard commits after the first `ok` ones, as a crash would
/// interrupt a run between shards.
struct FailingSink {
    inner: LocalDir,
    ok: Arc<AtomicUsize>,
}

struct FailingFile {
    inner: Box<dyn ShardFile>,
    ok: Arc<AtomicUsize>,
}

impl std::io::Write for FailingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl ShardFile for FailingFile {
    fn commit(self: Box<Self>) -> StoreResult<()> {
        unreachable!("pack names its shards on commit")
    }
    fn commit_as(self: Box<Self>, name: &str) -> StoreResult<()> {
        let allowed = self
            .ok
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if !allowed {
            return Err(shardsmith_store::Error::io(
                "committing",
                name,
                std::io::Error::other("simulated crash"),
            ));
        }
        self.inner.commit_as(name)
    }
}

impl OutputSink for FailingSink {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn create(&self, name: &str) -> StoreResult<Box<dyn ShardFile>> {
        let inner = self.inner.create(name)?;
        if !name.ends_with(".tar") {
            return Ok(inner);
        }
        Ok(Box::new(FailingFile {
            inner,
            ok: self.ok.clone(),
        }))
    }
    fn size(&self, name: &str) -> StoreResult<Option<u64>> {
        self.inner.size(name)
    }
    fn read(&self, name: &str) -> StoreResult<Option<Vec<u8>>> {
        self.inner.read(name)
    }
    fn remove(&self, name: &str) -> StoreResult<()> {
        self.inner.remove(name)
    }
    fn list(&self) -> StoreResult<Vec<String>> {
        self.inner.list()
    }
    fn lock_named(&self, tag: &str) -> StoreResult<Box<dyn Send>> {
        self.inner.lock_named(tag)
    }
    fn rename(&self, from: &str, to: &str) -> StoreResult<()> {
        self.inner.rename(from, to)
    }
    fn child(&self, sub: &str) -> StoreResult<Box<dyn OutputSink>> {
        self.inner.child(sub)
    }
}

/// Packs `input` into `out` on `threads` threads through a sink that fails every shard
/// commit after the first `commits`, as a crash would; returns the run's error.
pub(super) fn crashed_run(
    input: &Path,
    out: &Path,
    commits: usize,
    threads: usize,
    settings: &Opts,
) -> Error {
    let failing = FailingSink {
        inner: LocalDir::create(out).unwrap(),
        ok: Arc::new(AtomicUsize::new(commits)),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let err = pool
        .install(|| {
            pack(
                &FileTree::new(&LocalTree::new(input)),
                &failing,
                &settings.wds(),
                &settings.pack,
                &NoProgress,
            )
        })
        .unwrap_err();
    assert!(err.to_string().contains("simulated crash"), "{err}");
    err
}

#[test]
fn interrupted_runs_resume_to_identical_output() {
    let input = corpus(40);
    let clean = tempfile::tempdir().unwrap();
    let s = settings(6000);
    let full = run(input.path(), clean.path(), &s).unwrap();
    let shards = full.manifest.files.len();
    assert!(shards >= 6);
    for crash_after in [0, 1, shards / 2, shards - 1] {
        let out = tempfile::tempdir().unwrap();
        crashed_run(input.path(), out.path(), crash_after, 1, &s);
        assert!(
            !out.path().join(MANIFEST_FILE).exists(),
            "no manifest before every shard is done"
        );
        let resumed = run(input.path(), out.path(), &s).unwrap();
        assert_eq!(
            resumed.shards_resumed, crash_after,
            "finished shards are kept"
        );
        assert_eq!(
            snapshot(out.path()),
            snapshot(clean.path()),
            "crash after {crash_after} shards"
        );
    }
}
