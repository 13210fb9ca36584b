//! The shards a run writes: every input byte within the size limit, and the same bytes
//! for any thread count.

use super::*;

#[test]
fn shards_hold_every_input_byte_within_the_size_limit() {
    let input = corpus(30);
    let out = tempfile::tempdir().unwrap();
    let report = run(input.path(), out.path(), &settings(8192)).unwrap();
    let m = &report.manifest;
    assert!(m.files.len() > 3);
    let mut seen = Vec::new();
    for entry in &m.files {
        let path = out.path().join(&entry.path);
        assert!(entry.size <= 8192 || entry.samples == Some(1), "{entry:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), entry.size);
        assert_eq!(sha256_hex(&std::fs::read(&path).unwrap()), entry.sha256);
        let names = members(&path);
        assert_eq!(
            names.first().unwrap().0.split('.').next(),
            entry.first_key.as_deref()
        );
        seen.extend(names);
    }
    assert_eq!(seen.len(), 60);
    for (name, data) in seen {
        assert_eq!(
            std::fs::read(input.path().join(&name)).unwrap(),
            data,
            "{name}"
        );
    }
    assert_eq!(m.totals.samples, Some(30));
    let sums = std::fs::read_to_string(out.path().join(SUMS_FILE)).unwrap();
    assert_eq!(sums.lines().count(), m.files.len());
    assert!(!out.path().join(state::STATE_DIR).exists());
}

#[test]
fn output_is_identical_for_any_thread_count_and_shuffle_is_seeded() {
    let input = corpus(40);
    let mut outs = Vec::new();
    for threads in [1, 2, 5] {
        let out = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let s = settings(10_000).with(|s| s.shuffle_seed = Some(9));
        pool.install(|| run(input.path(), out.path(), &s)).unwrap();
        outs.push(snapshot(out.path()));
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
    let unshuffled = tempfile::tempdir().unwrap();
    run(input.path(), unshuffled.path(), &settings(10_000)).unwrap();
    assert_ne!(snapshot(unshuffled.path()), outs[0]);
}

/// A local tree that notes which threads read files.
struct Readers {
    inner: LocalTree,
    threads: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl InputSource for Readers {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn list(&self) -> StoreResult<InputListing> {
        self.inner.list()
    }
    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        let me = format!("{:?}", std::thread::current().id());
        self.threads.lock().unwrap().insert(me);
        // Slow enough that the helpers get a share of the reading.
        std::thread::sleep(std::time::Duration::from_micros(200));
        self.inner.read_into(rel, size, buf)
    }
    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
        self.inner.open(rel)
    }
    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
        self.inner.open_ranged(rel)
    }
}

#[test]
fn idle_workers_read_a_shard_ahead_of_its_writer_and_change_no_byte() {
    // One shard of 600 samples, some of them left out (broken JSON): at -j 4 three
    // workers have no shard of their own and read ahead for the one writer.
    let input = corpus(600);
    for i in (7..600).step_by(50) {
        let path = input.path().join(format!("c{}/{i:04}.json", i % 3));
        std::fs::write(path, b"{broken").unwrap();
    }
    let mut outs = Vec::new();
    for threads in [1, 4] {
        let out = tempfile::tempdir().unwrap();
        let sink = LocalDir::create(out.path()).unwrap();
        let source = Readers {
            inner: LocalTree::new(input.path()),
            threads: Default::default(),
        };
        let s = settings(1 << 30);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let report = pool
            .install(|| {
                pack(
                    &FileTree::new(&source),
                    &sink,
                    &s.wds(),
                    &s.pack,
                    &NoProgress,
                )
            })
            .unwrap();
        assert_eq!(report.manifest.files.len(), 1, "one shard");
        assert_eq!(
            report.manifest.skipped.len(),
            24,
            "12 samples of 2 files left out"
        );
        let readers = source.threads.lock().unwrap().len();
        if threads == 1 {
            assert_eq!(readers, 1);
        } else {
            assert!(readers > 1, "only the writer read: {readers} thread(s)");
        }
        outs.push((snapshot(out.path()), report.manifest.skipped));
    }
    assert_eq!(
        outs[0], outs[1],
        "the same bytes and the same left-out list"
    );
}
