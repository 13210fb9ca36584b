//! What the workers share: the units not yet handed out, the batches that stream
//! readers read for any worker to tokenize, and the bound on the batches in flight
//! (read and not yet written), which keeps memory flat whatever the input's size.
//!
//! The unit the writer waits for may always proceed, whatever the bound: its reader
//! (or, not yet taken, the next worker to ask) may read up to [`STREAM_AHEAD`] batches
//! ahead of the writer. Every other batch in flight is tokenized by whoever is free,
//! earliest first, so the writer is never left waiting on a batch nobody will make.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::plan::{Job, Planner, Unit};
use crate::batch::Batch;
use crate::work::Tokenized;

/// Where a batch goes in the output: its unit, and its place in the unit.
pub(super) type Key = (u64, u32);

/// Batches of the unit the writer waits for that its reader may read beyond the bound.
const STREAM_AHEAD: u32 = 2;

/// What a worker does next.
pub(super) enum Task {
    /// Tokenize a batch that a stream reader read.
    Tokenize(Key, Batch),
    /// Read a unit (and tokenize it, or hand its batches out).
    Unit(Unit),
}

/// What the reader of a stream unit does before reading its next batch.
pub(super) enum Permit {
    /// Read it.
    Read,
    /// Not yet: tokenize this batch meanwhile.
    Help(Key, Batch),
    /// The run stopped.
    Stop,
}

/// The state shared by the workers.
pub(super) struct Schedule<'a> {
    state: Mutex<State<'a>>,
    changed: Condvar,
    /// Batches in flight beyond which only the writer's unit reads on.
    limit: usize,
}

struct State<'a> {
    planner: Planner<'a>,
    /// Batches read by stream readers, not yet taken by a worker.
    pending: BTreeMap<Key, Batch>,
    /// Batches read (or units of pieces taken) and not yet written.
    in_flight: usize,
    /// The batch the writer needs next.
    writing: Key,
    /// Stream units being read.
    streams: usize,
    stopped: bool,
    /// Buffers to reuse.
    spare_batches: Vec<Batch>,
    spare_tokenized: Vec<Tokenized>,
}

impl<'a> Schedule<'a> {
    /// The units of `planner`, with at most about `limit` batches in flight.
    pub(super) fn new(planner: Planner<'a>, limit: usize) -> Self {
        let writing = (planner.next_seq(), 0);
        Self {
            state: Mutex::new(State {
                planner,
                pending: BTreeMap::new(),
                in_flight: 0,
                writing,
                streams: 0,
                stopped: false,
                spare_batches: Vec::new(),
                spare_tokenized: Vec::new(),
            }),
            changed: Condvar::new(),
            limit: limit.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, guard: MutexGuard<'g, State<'a>>) -> MutexGuard<'g, State<'a>> {
        self.changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The next task, waiting while the bound allows none; `None` when nothing is left
    /// to read or tokenize, or the run stopped.
    pub(super) fn next_task(&self) -> Option<Task> {
        let mut st = self.lock();
        loop {
            if st.stopped {
                return None;
            }
            if let Some((key, batch)) = st.pending.pop_first() {
                return Some(Task::Tokenize(key, batch));
            }
            if st.planner.exhausted() {
                if st.streams == 0 {
                    return None;
                }
            } else if st.in_flight < self.limit || st.planner.next_seq() == st.writing.0 {
                // Planning may read a Parquet footer: under the lock, once per file.
                let unit = st.planner.next_unit().expect("not exhausted");
                match unit.job {
                    Job::Pieces(_) => st.in_flight += 1,
                    Job::Stream(_) | Job::Rows { .. } => st.streams += 1,
                    Job::Failed(_) | Job::End(_) => {}
                }
                return Some(Task::Unit(unit));
            }
            st = self.wait(st);
        }
    }

    /// Asked by the reader of stream unit `seq` before it reads its batch `part`.
    pub(super) fn permit(&self, seq: u64, part: u32) -> Permit {
        let mut st = self.lock();
        loop {
            if st.stopped {
                return Permit::Stop;
            }
            let writers = st.writing.0 == seq && part - st.writing.1 < STREAM_AHEAD;
            if st.in_flight < self.limit || writers {
                st.in_flight += 1;
                return Permit::Read;
            }
            if let Some((key, batch)) = st.pending.pop_first() {
                return Permit::Help(key, batch);
            }
            st = self.wait(st);
        }
    }

    /// A batch a stream reader read, for any worker to tokenize.
    pub(super) fn push(&self, key: Key, batch: Batch) {
        self.lock().pending.insert(key, batch);
        self.changed.notify_all();
    }

    /// A permit to read was not used: the stream ended.
    pub(super) fn unread(&self) {
        self.lock().in_flight -= 1;
        self.changed.notify_all();
    }

    /// A stream unit is read to its end.
    pub(super) fn stream_done(&self) {
        self.lock().streams -= 1;
        self.changed.notify_all();
    }

    /// The writer needs `next` now; `counted` when what it wrote was a batch in flight.
    pub(super) fn written(&self, next: Key, counted: bool) {
        let mut st = self.lock();
        st.writing = next;
        if counted {
            st.in_flight -= 1;
        }
        drop(st);
        self.changed.notify_all();
    }

    /// Stops the run: every worker leaves at its next question.
    pub(super) fn stop(&self) {
        let mut st = self.lock();
        st.stopped = true;
        st.pending.clear();
        drop(st);
        self.changed.notify_all();
    }

    /// An empty batch, its buffers reused.
    pub(super) fn batch(&self) -> Batch {
        self.lock().spare_batches.pop().unwrap_or_default()
    }

    /// Takes back a batch that was tokenized.
    pub(super) fn recycle_batch(&self, batch: Batch) {
        self.lock().spare_batches.push(batch);
    }

    /// A tokenized batch to fill, its buffers reused.
    pub(super) fn tokenized(&self) -> Tokenized {
        self.lock().spare_tokenized.pop().unwrap_or_default()
    }

    /// Takes back a tokenized batch that was written.
    pub(super) fn recycle_tokenized(&self, tokenized: Tokenized) {
        self.lock().spare_tokenized.push(tokenized);
    }
}
