//! The threads of a run: `--jobs` workers, each of which takes a unit, reads it,
//! tokenizes it and hands it to the ordered writer (writing in turn), and the committer
//! (fsync, resume record, rename) of finished shards.

use std::sync::mpsc;

use super::ordered::{Msg, Ordered};
use super::output::{Commit, Output};
use super::plan::{Job, Planner, Unit};
use super::read::{Stream, read_pieces};
use super::schedule::{Key, Permit, Schedule, Task};
use crate::batch::Batch;
use crate::input::TextInput;
use crate::settings::{TokenizeObserver, TokenizeSettings};
use crate::tokenizer::Tokenizer;
use crate::work::{Framing, WorkerScratch, tokenize_batch};
use crate::{Error, Result};
use shardsmith_store::resume;

/// Batches in flight (read and not yet written) per worker, and beyond: how far the
/// workers can run ahead of one busy with a slow batch (some text takes several times
/// longer per byte than other) before they must wait for it. At 2 × jobs + 2, the workers
/// of `-j 2` waited about 6% of their time on the benchmark's 200 MB of JSONL; at
/// 4 × jobs + 8, not at all.
const IN_FLIGHT_PER_JOB: usize = 4;
const IN_FLIGHT_MORE: usize = 8;

/// What every worker reads and writes with.
struct Context<'s, 'a> {
    inputs: &'a [TextInput],
    field: &'a str,
    tokenizer: &'a Tokenizer,
    framing: Framing,
    schedule: &'s Schedule<'a>,
    ordered: &'s Ordered<'a>,
}

/// Runs the workers and the committer over the units of `planner` until the input is
/// read and every shard is committed.
pub(crate) fn pipeline<'a>(
    planner: Planner<'a>,
    tokenizer: &'a Tokenizer,
    settings: &'a TokenizeSettings,
    out: Output<'a>,
    fingerprint: &str,
    observer: &'a dyn TokenizeObserver,
) -> Result<Output<'a>> {
    let inputs = planner.inputs();
    let threads = settings.threads.max(1);
    let (commit_tx, commit_rx) = mpsc::channel::<Commit>();
    let sink = out.sink;
    let framing = Framing {
        format: out.format,
        eod: out.eod,
        dtype: out.dtype,
        vocab: out.vocab,
        digest: out.seen.is_some(),
    };
    let first = (planner.next_seq(), 0);
    let schedule = Schedule::new(planner, IN_FLIGHT_PER_JOB * threads + IN_FLIGHT_MORE);
    let ordered = Ordered::new(out, first, commit_tx, observer);
    let context = Context {
        inputs,
        field: &settings.field,
        tokenizer,
        framing,
        schedule: &schedule,
        ordered: &ordered,
    };
    std::thread::scope(|scope| {
        let ordered = &ordered;
        let committer = scope.spawn(move || {
            for commit in commit_rx {
                let done = resume::save_done(sink, fingerprint, "", &commit.name, &commit.record)
                    .and_then(|()| commit.files.into_iter().try_for_each(|f| f.commit()));
                if let Err(e) = done {
                    ordered.commit_failed();
                    return Err(Error::from(e));
                }
            }
            Ok(())
        });
        let workers: Vec<_> = (0..threads)
            .map(|_| scope.spawn(|| context.work()))
            .collect();
        let panicked = workers.into_iter().any(|w| w.join().is_err());
        let outcome = ordered.finish();
        let committed = committer
            .join()
            .unwrap_or(Err(Error::Panicked("the commit thread")));
        if panicked {
            return Err(Error::Panicked("a worker thread"));
        }
        committed?;
        outcome.unwrap_or(Err(Error::Stopped("the input stopped before its end")))
    })
}

/// Stops the run when a worker panics, so the others do not wait for what it held.
struct StopOnPanic<'s, 'a>(&'s Schedule<'a>);

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop();
        }
    }
}

impl Context<'_, '_> {
    /// One worker: tasks until none is left.
    fn work(&self) {
        let _stop = StopOnPanic(self.schedule);
        let mut scratch = WorkerScratch::default();
        while let Some(task) = self.schedule.next_task() {
            match task {
                Task::Tokenize(key, batch) => self.tokenize(key, batch, false, &mut scratch),
                Task::Unit(unit) => self.unit(unit, &mut scratch),
            }
        }
    }

    fn submit(&self, key: Key, msg: Msg) {
        self.ordered.submit(key, msg, self.schedule);
    }

    /// Tokenizes `batch` and hands it to the writer at `key`.
    fn tokenize(&self, key: Key, batch: Batch, last: bool, scratch: &mut WorkerScratch) {
        let mut tokens = self.schedule.tokenized();
        tokenize_batch(
            &batch,
            self.tokenizer,
            self.field,
            &self.framing,
            scratch,
            &mut tokens,
        );
        self.schedule.recycle_batch(batch);
        self.submit(key, Msg::Batch { tokens, last });
    }

    fn unit(&self, Unit { seq, job }: Unit, scratch: &mut WorkerScratch) {
        let key = (seq, 0);
        match job {
            Job::Pieces(pieces) => {
                let mut batch = self.schedule.batch();
                match read_pieces(self.inputs, &pieces, &mut batch) {
                    Ok(()) => self.tokenize(key, batch, true, scratch),
                    Err(e) => self.submit(key, Msg::Failed(e)),
                }
            }
            Job::Stream(from) => {
                let stream = Stream::lines(self.inputs, self.field, from);
                self.stream(seq, stream, scratch);
            }
            Job::Rows {
                file,
                parquet,
                rows,
                last,
            } => match Stream::rows(self.inputs, file, &parquet, rows, last) {
                Ok(stream) => self.stream(seq, stream, scratch),
                Err(e) => {
                    self.submit(key, Msg::Failed(e));
                    self.schedule.stream_done();
                }
            },
            Job::Failed(e) => self.submit(key, Msg::Failed(e)),
            Job::End(end) => self.submit(key, Msg::End(end)),
        }
    }

    /// Reads stream unit `seq` to its end, batch by batch, for any worker to tokenize;
    /// while the bound allows no read, tokenizes what is waiting.
    fn stream(&self, seq: u64, mut stream: Stream<'_>, scratch: &mut WorkerScratch) {
        let mut part = 0;
        loop {
            match self.schedule.permit(seq, part) {
                Permit::Read => {}
                Permit::Help(key, batch) => {
                    self.tokenize(key, batch, false, scratch);
                    continue;
                }
                Permit::Stop => break,
            }
            let mut batch = self.schedule.batch();
            match stream.fill(&mut batch) {
                Ok(true) => {
                    self.schedule.push((seq, part), batch);
                    part += 1;
                }
                Ok(false) => {
                    self.schedule.recycle_batch(batch);
                    self.schedule.unread();
                    self.submit((seq, part), Msg::EndOfUnit);
                    break;
                }
                Err(e) => {
                    self.schedule.recycle_batch(batch);
                    self.schedule.unread();
                    self.submit((seq, part), Msg::Failed(e));
                    break;
                }
            }
        }
        self.schedule.stream_done();
    }
}
