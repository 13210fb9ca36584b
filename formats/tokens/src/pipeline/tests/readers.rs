//! No thread reads the whole input: several workers read at once.

use super::corpus::{gpt2, settings};
use crate::input::{InputRoot, list};
use crate::settings::NoProgress;
use crate::write::TokenFormat;
use shardsmith_store::LocalDir;

/// Where the readers of a [`MeetingSource`] are.
#[derive(Default)]
struct Meeting {
    /// The threads reading now.
    inside: std::collections::HashSet<std::thread::ThreadId>,
    /// Two threads were reading at once.
    met: bool,
    /// A reader waited in vain: no more waiting.
    gave_up: bool,
}

/// Makes every read wait (a while, until the first meeting) for a second reader.
#[derive(Default)]
struct Rendezvous {
    state: std::sync::Mutex<Meeting>,
    changed: std::sync::Condvar,
}

impl Rendezvous {
    fn meet(&self) {
        let me = std::thread::current().id();
        let mut st = self.state.lock().unwrap();
        st.inside.insert(me);
        st.met |= st.inside.len() >= 2;
        self.changed.notify_all();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !st.met && !st.gave_up {
            let now = std::time::Instant::now();
            if now >= deadline {
                st.gave_up = true;
                break;
            }
            st = self.changed.wait_timeout(st, deadline - now).unwrap().0;
        }
        st.inside.remove(&me);
    }
}

/// A local tree whose reads meet at a [`Rendezvous`].
struct MeetingSource {
    inner: shardsmith_store::LocalTree,
    rendezvous: std::sync::Arc<Rendezvous>,
}

struct MeetingFile {
    inner: std::sync::Arc<dyn shardsmith_store::RangeRead>,
    rendezvous: std::sync::Arc<Rendezvous>,
}

impl shardsmith_store::RangeRead for MeetingFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.rendezvous.meet();
        self.inner.read_at(offset, buf)
    }
}

struct MeetingReader {
    inner: Box<dyn std::io::Read + Send>,
    rendezvous: std::sync::Arc<Rendezvous>,
}

impl std::io::Read for MeetingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.rendezvous.meet();
        self.inner.read(buf)
    }
}

impl shardsmith_store::InputSource for MeetingSource {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn list(&self) -> shardsmith_store::Result<shardsmith_store::InputListing> {
        self.inner.list()
    }
    fn read_into(
        &self,
        rel: &str,
        size: u64,
        buf: &mut Vec<u8>,
    ) -> Result<(), shardsmith_store::ReadError> {
        self.rendezvous.meet();
        self.inner.read_into(rel, size, buf)
    }
    fn open(
        &self,
        rel: &str,
    ) -> Result<Box<dyn std::io::Read + Send>, shardsmith_store::ReadError> {
        self.open_at(rel, 0)
    }
    fn open_at(
        &self,
        rel: &str,
        offset: u64,
    ) -> Result<Box<dyn std::io::Read + Send>, shardsmith_store::ReadError> {
        Ok(Box::new(MeetingReader {
            inner: self.inner.open_at(rel, offset)?,
            rendezvous: self.rendezvous.clone(),
        }))
    }
    fn open_ranged(
        &self,
        rel: &str,
    ) -> Result<std::sync::Arc<dyn shardsmith_store::RangeRead>, shardsmith_store::ReadError> {
        Ok(std::sync::Arc::new(MeetingFile {
            inner: self.inner.open_ranged(rel)?,
            rendezvous: self.rendezvous.clone(),
        }))
    }
}

/// No thread reads the whole input: with several workers, two read a plain JSONL file
/// at the same time (each read waits for a second reader, a while, the first time).
#[test]
fn several_workers_read_one_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{{\"text\": \"{}\"}}\n", "word ".repeat(200));
    std::fs::write(
        dir.path().join("c.jsonl"),
        line.repeat(4 * (1 << 20) / line.len()),
    )
    .unwrap();
    let rendezvous = std::sync::Arc::new(Rendezvous::default());
    let root = InputRoot {
        source: std::sync::Arc::new(MeetingSource {
            inner: shardsmith_store::LocalTree::new(dir.path()),
            rendezvous: rendezvous.clone(),
        }),
        display: dir.path().display().to_string(),
        file: None,
    };
    let files = list(&[root]).unwrap();
    let sink = LocalDir::create(dir.path().join("out")).unwrap();
    let settings = settings(TokenFormat::Nanogpt, 1 << 20, 4);
    crate::tokenize(&files, &sink, gpt2(), &settings, &NoProgress).unwrap();
    assert!(
        rendezvous.state.lock().unwrap().met,
        "two threads read the input at the same time"
    );
}
