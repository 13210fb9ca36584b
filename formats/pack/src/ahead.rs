//! Samples of a shard loaded ahead of its writer by workers that have no shard left to
//! write.
//!
//! Workers write one shard each, so once the last plans are taken the workers that
//! finish first would sit idle while the others write the run's last shards: on 2 cores
//! with 15 shards, one core writes the 15th alone; on 16 cores with 22 shards, 10 cores
//! idle through the second round. A shard's bytes must be encoded and hashed in order by
//! its writer, but its samples can be read (and content-checked) by anyone: each shard
//! is cut into segments of consecutive samples, and an idle worker claims a segment a
//! little ahead of the writer, loads and checks its samples into buffers of its own and
//! hands them over. The writer takes a segment a helper loaded, and loads the others
//! itself, so the shard's bytes, and what is left out, are the same whoever loads: output
//! does not depend on `--jobs`.
//!
//! Only sources that read any sample at any time ([`SampleSource::loads_in_any_order`]:
//! local trees) are helped; an object store's source fetches ahead in the writer's order
//! already. Memory stays bounded: helpers run at most [`WINDOW`] segments ahead of each
//! writer, and a segment holds at most [`SEGMENT_BYTES`] (or one sample, however large,
//! up to the in-memory limit; larger samples are streams, not buffers).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use shardsmith_shard::SampleSpec;
use shardsmith_shard::sample::SampleReader;

use super::load::{LoadResult, WriteContext, load_checked};

/// A segment holds consecutive samples up to this many payload bytes...
pub(crate) const SEGMENT_BYTES: u64 = 1 << 20;
/// ...and at most this many samples.
const SEGMENT_SAMPLES: usize = 64;
/// Helpers load at most this many segments ahead of the writer's.
pub(crate) const WINDOW: usize = 8;

/// One loaded sample and the buffer its `Loaded::Memory` ranges point into.
struct Load {
    result: LoadResult,
    buf: Vec<u8>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The shards being written, for idle workers to help.
#[derive(Default)]
pub(crate) struct Helpers<'a> {
    shards: Mutex<Vec<Arc<Ahead<'a>>>>,
    /// Rung when a shard starts or ends, or a writer moves on to its next segment.
    changed: Condvar,
}

impl<'a> Helpers<'a> {
    /// Registers a shard being written; it is helped until [`Helpers::finished`].
    fn start(&self, ahead: &Arc<Ahead<'a>>) {
        lock(&self.shards).push(ahead.clone());
        self.changed.notify_all();
    }

    fn finished(&self, ahead: &Arc<Ahead<'a>>) {
        lock(&self.shards).retain(|a| !Arc::ptr_eq(a, ahead));
        self.changed.notify_all();
    }

    /// Helps the shards being written until `more` says no shard may start any more
    /// and none is left to help.
    pub(crate) fn help(&self, ctx: &WriteContext<'_>, more: &dyn Fn() -> bool) {
        loop {
            let shards = lock(&self.shards);
            // The shard with the most segments left unclaimed: the one that ends last.
            let work = shards
                .iter()
                .filter_map(|a| a.claimable().map(|segment| (a, segment)))
                .max_by_key(|(a, segment)| a.segments() - segment)
                .and_then(|(a, segment)| a.claim(segment).then(|| (a.clone(), segment)));
            match work {
                Some((ahead, segment)) => {
                    drop(shards);
                    ahead.load(ctx, segment);
                }
                None if shards.is_empty() && !more() => return,
                None => {
                    // Woken by a writer's progress; the timeout covers a shard that
                    // starts between `more()` and the wait.
                    let _ = self
                        .changed
                        .wait_timeout(shards, Duration::from_millis(2))
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// One shard's samples, cut into segments, with the segments helpers loaded.
pub(crate) struct Ahead<'a> {
    samples: &'a [SampleSpec],
    /// Where each segment starts, then `samples.len()`.
    starts: Vec<usize>,
    /// Segments `0..claimed` are taken, by the writer or a helper.
    claimed: AtomicUsize,
    state: Mutex<State>,
    arrived: Condvar,
}

#[derive(Default)]
struct State {
    /// The segment the writer is in.
    writer_at: usize,
    /// Segments loaded by helpers and not yet taken by the writer.
    loaded: HashMap<usize, Vec<Load>>,
}

impl<'a> Ahead<'a> {
    fn new(samples: &'a [SampleSpec]) -> Self {
        let mut starts = vec![0];
        let (mut bytes, mut count) = (0u64, 0usize);
        for (i, sample) in samples.iter().enumerate() {
            if count > 0 && (bytes + sample.payload() > SEGMENT_BYTES || count == SEGMENT_SAMPLES) {
                starts.push(i);
                (bytes, count) = (0, 0);
            }
            bytes += sample.payload();
            count += 1;
        }
        starts.push(samples.len());
        Self {
            samples,
            starts,
            claimed: AtomicUsize::new(0),
            state: Mutex::new(State::default()),
            arrived: Condvar::new(),
        }
    }

    fn segments(&self) -> usize {
        self.starts.len() - 1
    }

    /// The next unclaimed segment, if it is within the window ahead of the writer.
    fn claimable(&self) -> Option<usize> {
        let next = self.claimed.load(Ordering::Acquire);
        let limit = lock(&self.state).writer_at + WINDOW;
        (next < self.segments() && next < limit).then_some(next)
    }

    /// Claims `segment` if it is still the next one unclaimed.
    fn claim(&self, segment: usize) -> bool {
        self.claimed
            .compare_exchange(segment, segment + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// A helper loads and checks every sample of `segment` (stopping after a hard
    /// error, which ends the writer's run there anyway) and hands them to the writer.
    fn load(&self, ctx: &WriteContext<'_>, segment: usize) {
        let samples = &self.samples[self.starts[segment]..self.starts[segment + 1]];
        let mut loads = Vec::with_capacity(samples.len());
        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match ctx.source.reader(samples, ctx.validation) {
                Err(e) => loads.push(Load {
                    result: Err(e),
                    buf: Vec::new(),
                }),
                Ok(mut reader) => {
                    for (index, sample) in samples.iter().enumerate() {
                        let mut buf = Vec::new();
                        let result = load_checked(ctx, reader.as_mut(), index, sample, &mut buf);
                        let hard = result.is_err();
                        loads.push(Load { result, buf });
                        if hard {
                            break;
                        }
                    }
                }
            }
        }));
        if loaded.is_err() {
            // The writer must not wait for a segment that never comes: it loads
            // what is missing itself (and meets the same panic, reported there).
            loads.push(Load {
                result: Err(shardsmith_shard::Error::Setting(format!(
                    "a worker failed while reading ahead for shard samples from `{}`",
                    samples.first().map_or("", |s| s.key.as_str())
                ))),
                buf: Vec::new(),
            });
        }
        lock(&self.state).loaded.insert(segment, loads);
        self.arrived.notify_all();
    }
}

/// The writer's side: its samples in order, each taken from what a helper loaded or
/// loaded by the writer itself.
pub(crate) struct Feed<'h, 'a> {
    helped: Option<(&'h Helpers<'a>, Arc<Ahead<'a>>)>,
    segment: usize,
    own: bool,
    queue: std::collections::VecDeque<Load>,
}

impl<'h, 'a> Feed<'h, 'a> {
    /// The feed of a shard of `samples`, helped by `helpers` when the source can be read
    /// in any order.
    pub(crate) fn new(
        ctx: &WriteContext<'_>,
        helpers: Option<&'h Helpers<'a>>,
        samples: &'a [SampleSpec],
    ) -> Self {
        let helped = helpers
            .filter(|_| ctx.source.loads_in_any_order() && samples.len() > 1)
            .map(|helpers| {
                let ahead = Arc::new(Ahead::new(samples));
                helpers.start(&ahead);
                (helpers, ahead)
            });
        Self {
            helped,
            segment: 0,
            own: true,
            queue: Default::default(),
        }
    }

    /// Sample `index` (asked for 0, 1, 2, ... in turn), loaded and checked into `buf`.
    pub(crate) fn next(
        &mut self,
        ctx: &WriteContext<'_>,
        reader: &mut dyn SampleReader,
        index: usize,
        sample: &SampleSpec,
        buf: &mut Vec<u8>,
    ) -> LoadResult {
        if let Some((helpers, ahead)) = &self.helped {
            if index == ahead.starts[self.segment + 1] || index == 0 {
                if index != 0 {
                    self.segment += 1;
                }
                let (helpers, ahead) = (*helpers, ahead.clone());
                self.enter(helpers, &ahead);
            }
            if !self.own
                && let Some(load) = self.queue.pop_front()
            {
                *buf = load.buf;
                return load.result;
            }
        }
        load_checked(ctx, reader, index, sample, buf)
    }

    /// Enters the next segment: claims it, or takes it from the helper that did.
    fn enter(&mut self, helpers: &Helpers<'a>, ahead: &Ahead<'a>) {
        let segment = self.segment;
        lock(&ahead.state).writer_at = segment;
        helpers.changed.notify_all();
        self.own = ahead.claim(segment);
        if self.own {
            return;
        }
        let mut state = lock(&ahead.state);
        loop {
            if let Some(loads) = state.loaded.remove(&segment) {
                self.queue = loads.into();
                return;
            }
            state = ahead
                .arrived
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Feed<'_, '_> {
    fn drop(&mut self) {
        if let Some((helpers, ahead)) = self.helped.take() {
            helpers.finished(&ahead);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sized as samples;

    #[test]
    fn segments_hold_a_mebibyte_or_64_samples_and_a_large_sample_alone() {
        let small = samples(&[1000; 200]);
        let ahead = Ahead::new(&small);
        assert_eq!(ahead.starts, vec![0, 64, 128, 192, 200]);
        let mixed = samples(&[600_000, 600_000, 5 << 20, 10, 10]);
        let ahead = Ahead::new(&mixed);
        assert_eq!(ahead.starts, vec![0, 1, 2, 3, 5]);
    }

    #[test]
    fn helpers_claim_only_within_the_window_ahead_of_the_writer() {
        let many = samples(&[1000; 64 * 20]);
        let ahead = Ahead::new(&many);
        for segment in 0..WINDOW {
            assert_eq!(ahead.claimable(), Some(segment));
            assert!(ahead.claim(segment));
        }
        assert_eq!(ahead.claimable(), None, "the window is full");
        assert!(!ahead.claim(3), "a claimed segment is not claimed twice");
        lock(&ahead.state).writer_at = 2;
        assert_eq!(ahead.claimable(), Some(WINDOW));
    }
}
