//! `pack`'s progress bar: bytes planned and written, and the sample count, read from
//! counters when the bar draws.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use shardsmith_pack::PackObserver;

use crate::output::Printer;
use crate::progress::Progress as _;

pub(super) struct Progress {
    pub(super) bar: crate::progress::Bar,
    counts: Arc<Counts>,
}

/// Samples done and planned, read by the bar when it draws.
#[derive(Default)]
struct Counts {
    done: AtomicU64,
    total: AtomicU64,
    /// Listed samples gone through by the image transforms, and how many there are.
    transformed: AtomicU64,
    to_transform: AtomicU64,
}

impl Progress {
    pub(super) fn new(printer: &Printer) -> Self {
        let counts = Arc::new(Counts::default());
        let shown = counts.clone();
        let bar = printer.bytes_bar_with(
            "packing",
            Arc::new(move || {
                let total = shown.total.load(Ordering::Relaxed);
                let to_transform = shown.to_transform.load(Ordering::Relaxed);
                if total == 0 && to_transform > 0 {
                    return format!(
                        "transforming images: {}/{to_transform} samples",
                        shown.transformed.load(Ordering::Relaxed)
                    );
                }
                if total == 0 {
                    return "listing inputs".into();
                }
                format!("{}/{total} samples", shown.done.load(Ordering::Relaxed))
            }),
        );
        Self { bar, counts }
    }
}

impl PackObserver for Progress {
    fn planned(&self, samples: u64, bytes: u64, _shards: usize) {
        self.counts.total.store(samples, Ordering::Relaxed);
        self.bar.set_total(bytes);
    }

    fn advanced(&self, samples: u64, bytes: u64) {
        self.counts.done.fetch_add(samples, Ordering::Relaxed);
        self.bar.inc(bytes);
    }

    fn transforming(&self, samples: u64) {
        self.counts.to_transform.store(samples, Ordering::Relaxed);
    }

    fn transformed(&self, samples: u64) {
        self.counts
            .transformed
            .fetch_add(samples, Ordering::Relaxed);
    }
}
