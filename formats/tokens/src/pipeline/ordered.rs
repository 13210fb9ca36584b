//! The batches back in input order, with no writer thread of its own: a worker that
//! hands in a batch also writes, while no other worker is writing, every batch that is
//! next in order ([`Ordered::submit`]). So `--jobs N` uses N threads for all the work,
//! and the writing moves to whichever worker is free. Writing only appends bytes the
//! workers encoded (and hashes them): it is the one part done in order, and small.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::output::{Commit, Output};
use super::schedule::{Key, Schedule};
use crate::batch::Position;
use crate::settings::TokenizeObserver;
use crate::work::Tokenized;
use crate::{Error, Result};

/// What a unit hands in for the writer, at its key.
pub(super) enum Msg {
    /// A tokenized batch, in flight; `last` when it is its unit's last.
    Batch { tokens: Tokenized, last: bool },
    /// A stream unit ends (after its last batch).
    EndOfUnit,
    /// The unit cannot be read: the run stops here.
    Failed(Error),
    /// The input ends, at this position.
    End(Position),
}

/// The writer's state, held by the one worker writing.
struct Writer<'a> {
    out: Output<'a>,
    commits: Sender<Commit>,
}

struct State<'a> {
    /// What was handed in and is not next yet.
    waiting: BTreeMap<Key, Msg>,
    /// The key written next.
    next: Key,
    /// The writer, when no worker is writing.
    idle: Option<Writer<'a>>,
    /// How the run ended: the output, or the first error in input order.
    outcome: Option<Result<Output<'a>>>,
}

/// The ordered writer, shared by the workers.
pub(super) struct Ordered<'a> {
    state: Mutex<State<'a>>,
    /// Set by the committer when a shard could not be committed.
    failed: AtomicBool,
    observer: &'a dyn TokenizeObserver,
}

impl<'a> Ordered<'a> {
    /// Writes into `out` from key `first` on; finished shards go to `commits`.
    pub(super) fn new(
        out: Output<'a>,
        first: Key,
        commits: Sender<Commit>,
        observer: &'a dyn TokenizeObserver,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                waiting: BTreeMap::new(),
                next: first,
                idle: Some(Writer { out, commits }),
                outcome: None,
            }),
            failed: AtomicBool::new(false),
            observer,
        }
    }

    /// Said by the committer: a shard could not be committed, so writing stops.
    pub(super) fn commit_failed(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands in `msg` at `key`; then, unless another worker is writing, writes every
    /// message that is next in order. The run's end or first error stops `schedule`.
    pub(super) fn submit(&self, key: Key, msg: Msg, schedule: &Schedule<'_>) {
        let mut st = self.lock();
        if st.outcome.is_some() {
            return;
        }
        st.waiting.insert(key, msg);
        let Some(mut writer) = st.idle.take() else {
            return;
        };
        loop {
            let key = st.next;
            let Some(msg) = st.waiting.remove(&key) else {
                st.idle = Some(writer);
                return;
            };
            drop(st);
            let step = self.write(&mut writer, key, msg, schedule);
            st = self.lock();
            match step {
                Ok(Some((next, counted))) => {
                    st.next = next;
                    schedule.written(next, counted);
                }
                Ok(None) => {
                    st.outcome = Some(Ok(writer.out));
                    schedule.stop();
                    return;
                }
                Err(e) => {
                    st.outcome = Some(Err(e));
                    st.waiting.clear();
                    schedule.stop();
                    return;
                }
            }
        }
    }

    /// Writes one message; returns the key needed next and whether the message was a
    /// batch in flight, or `None` at the end of the input.
    fn write(
        &self,
        writer: &mut Writer<'a>,
        key: Key,
        msg: Msg,
        schedule: &Schedule<'_>,
    ) -> Result<Option<(Key, bool)>> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(Error::Stopped("a finished shard could not be committed"));
        }
        match msg {
            Msg::Batch { tokens, last } => {
                let out = &mut writer.out;
                let before = (out.stats.documents, out.stats.tokens);
                out.batch(&tokens, &writer.commits)?;
                self.observer.advanced(
                    out.stats.documents - before.0,
                    tokens.input_bytes,
                    out.stats.tokens - before.1,
                );
                schedule.recycle_tokenized(tokens);
                let next = if last {
                    (key.0 + 1, 0)
                } else {
                    (key.0, key.1 + 1)
                };
                Ok(Some((next, true)))
            }
            Msg::EndOfUnit => Ok(Some(((key.0 + 1, 0), false))),
            Msg::Failed(e) => Err(e),
            Msg::End(end) => {
                writer.out.close(end, 0, &writer.commits)?;
                Ok(None)
            }
        }
    }

    /// How the run ended, once every worker has left: the output, the first error in
    /// input order, or `None` when it stopped without either (a worker panicked). Lets
    /// go of the committer's channel.
    pub(super) fn finish(&self) -> Option<Result<Output<'a>>> {
        let mut st = self.lock();
        st.idle = None;
        st.waiting.clear();
        st.outcome.take()
    }
}
