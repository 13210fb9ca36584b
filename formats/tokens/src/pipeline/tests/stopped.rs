//! A run stopped midway (its output fails) resumes to the bytes of a whole run.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::corpus::{FORMATS, corpus, gpt2, run, settings, snapshot};
use crate::input::{InputRoot, list};
use crate::pipeline::plan::CUT_BYTES;
use crate::run::tokenize_cut;
use crate::settings::NoProgress;
use shardsmith_store::{LocalDir, OutputSink, ShardFile};

/// A local output whose `fail_at`-th token file cannot be created: a run that stops
/// midway, with the shards before it committed.
struct FailingSink {
    inner: LocalDir,
    created: AtomicUsize,
    fail_at: usize,
}

impl OutputSink for FailingSink {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn create(&self, name: &str) -> shardsmith_store::Result<Box<dyn ShardFile>> {
        if name.ends_with(".bin") && self.created.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            return Err(shardsmith_store::Error::io(
                "creating",
                name,
                std::io::Error::other("stopped here by the test"),
            ));
        }
        self.inner.create(name)
    }
    fn size(&self, name: &str) -> shardsmith_store::Result<Option<u64>> {
        self.inner.size(name)
    }
    fn read(&self, name: &str) -> shardsmith_store::Result<Option<Vec<u8>>> {
        self.inner.read(name)
    }
    fn remove(&self, name: &str) -> shardsmith_store::Result<()> {
        self.inner.remove(name)
    }
    fn list(&self) -> shardsmith_store::Result<Vec<String>> {
        self.inner.list()
    }
    fn lock_named(&self, tag: &str) -> shardsmith_store::Result<Box<dyn Send>> {
        self.inner.lock_named(tag)
    }
    fn rename(&self, from: &str, to: &str) -> shardsmith_store::Result<()> {
        self.inner.rename(from, to)
    }
    fn child(&self, sub: &str) -> shardsmith_store::Result<Box<dyn OutputSink>> {
        self.inner.child(sub)
    }
}

#[test]
fn a_run_stopped_midway_resumes_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    corpus(&input);
    let files = list(&[InputRoot::local(&input).unwrap()]).unwrap();
    for (format, shard_tokens) in FORMATS {
        let reference = dir.path().join(format!("{format:?}"));
        run(
            &files,
            &reference,
            &settings(format, shard_tokens, 1),
            CUT_BYTES,
        )
        .unwrap();
        let want = snapshot(&reference);
        let shards = want.keys().filter(|k| k.ends_with(".bin")).count();
        assert!(shards > 10, "{format:?}: {shards} shards");
        for (jobs, cut, fail_at) in [
            (1, CUT_BYTES, 3),
            (2, 64, 1),
            (3, 1000, shards / 2),
            (7, 5, shards - 1),
        ] {
            let out = dir.path().join(format!("{format:?}-{jobs}-{cut}"));
            let failing = FailingSink {
                inner: LocalDir::create(&out).unwrap(),
                created: AtomicUsize::new(0),
                fail_at,
            };
            let settings = settings(format, shard_tokens, jobs);
            let err = tokenize_cut(&files, &failing, gpt2(), &settings, &NoProgress, cut)
                .expect_err("stopped");
            assert!(
                err.to_string().contains("stopped here by the test"),
                "{err}"
            );
            let kept = std::fs::read_dir(&out)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .ends_with(".bin")
                })
                .count();
            assert_eq!(
                kept, fail_at,
                "{format:?}: the shards before the failure are kept"
            );
            let report = run(&files, &out, &settings, cut).unwrap();
            assert_eq!(report.shards_resumed, fail_at);
            assert!(
                snapshot(&out) == want,
                "{format:?} -j {jobs} cut {cut}: resumed after {fail_at} shards"
            );
        }
    }
}
