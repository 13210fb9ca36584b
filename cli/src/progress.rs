//! The progress bar: a spinner until the total is known, then a bar. Bytes in the same
//! decimal units as the summaries (kB, MB, GB); throughput shown after the first
//! second and the ETA after the first three, both from indicatif's smoothed rate;
//! extra counts (samples, documents) are read from counters when a frame is drawn, so
//! they never go backwards whichever thread finished last.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::size::human_bytes;

/// Text drawn after the bytes, evaluated at every frame.
pub type Extra = Arc<dyn Fn() -> String + Send + Sync>;

/// Where a running command shows how far it got: the CLI's bars on a terminal
/// ([`crate::output::Printer`]), or nothing ([`NoProgress`], the Python API).
pub trait Progress: Sync {
    /// A byte progress bar with `extra` (counts read at every frame) after the bytes.
    fn bytes_bar_with(&self, what: &str, extra: Extra) -> Bar;

    /// A byte progress bar labelled `what`.
    fn bytes_bar(&self, what: &str) -> Bar {
        self.bytes_bar_with(what, Arc::new(String::new))
    }
}

/// Progress shown nowhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn bytes_bar_with(&self, _what: &str, _extra: Extra) -> Bar {
        Bar::hidden()
    }
}

/// No throughput before this much time has passed (the first blocks say nothing).
const RATE_AFTER: Duration = Duration::from_secs(1);
/// No ETA before this much time has passed.
const ETA_AFTER: Duration = Duration::from_secs(3);

/// A byte progress bar on stderr (or a hidden one).
pub struct Bar {
    bar: ProgressBar,
    extra: Extra,
    has_total: AtomicBool,
}

impl Bar {
    /// A bar that draws nothing.
    pub fn hidden() -> Self {
        Self {
            bar: ProgressBar::hidden(),
            extra: Arc::new(String::new),
            has_total: AtomicBool::new(false),
        }
    }

    /// A spinner labelled `what` until [`Bar::set_total`].
    pub fn new(what: &str, extra: Extra) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(style(
            "{prefix:.bold} {spinner} {done} {extra}",
            extra.clone(),
        ));
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Self {
            bar,
            extra,
            has_total: AtomicBool::new(false),
        }
    }

    /// The number of bytes the work covers; the spinner becomes a bar. May grow.
    pub fn set_total(&self, total: u64) {
        self.bar.set_length(total);
        if !self.has_total.swap(true, Ordering::Relaxed) && !self.bar.is_hidden() {
            self.bar.set_style(
                style(
                    "{prefix:.bold} {wide_bar:.cyan/blue} {done}/{total}{rate}{eta} {extra}",
                    self.extra.clone(),
                )
                .progress_chars("=> "),
            );
        }
    }

    /// `n` more bytes done.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Removes the bar from the terminal.
    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }
}

fn style(template: &str, extra: Extra) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("template is valid")
        .with_key("done", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&human_bytes(s.pos()));
        })
        .with_key("total", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&human_bytes(s.len().unwrap_or(0)));
        })
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&rate(s.elapsed(), s.pos(), s.per_sec()));
        })
        .with_key("eta", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&eta(s.elapsed(), s.pos(), s.len(), s.eta()));
        })
        .with_key(
            "extra",
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&extra());
            },
        )
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ")
}

/// `"  12.3 MB/s"`, or nothing in the first second or before any byte.
fn rate(elapsed: Duration, pos: u64, per_sec: f64) -> String {
    if elapsed < RATE_AFTER || pos == 0 || !per_sec.is_finite() {
        return String::new();
    }
    format!("  {}/s", human_bytes(per_sec as u64))
}

/// `"  ETA 42s"`, or nothing in the first three seconds, before any byte or without a
/// total.
fn eta(elapsed: Duration, pos: u64, len: Option<u64>, eta: Duration) -> String {
    match len {
        Some(len) if elapsed >= ETA_AFTER && pos > 0 && pos < len => {
            let mut out = String::new();
            let _ = write!(out, "  ETA {}", HumanDuration(eta));
            out
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rate_or_eta_at_first() {
        assert_eq!(rate(Duration::from_millis(300), 10, 1e6), "");
        assert_eq!(rate(Duration::from_secs(2), 0, 1e6), "");
        assert_eq!(rate(Duration::from_secs(2), 10, 1.5e6), "  1.5 MB/s");
        let e = Duration::from_secs(42);
        assert_eq!(eta(Duration::from_secs(2), 10, Some(100), e), "");
        assert_eq!(eta(Duration::from_secs(5), 10, None, e), "");
        assert_eq!(eta(Duration::from_secs(5), 100, Some(100), e), "");
        assert_eq!(
            eta(Duration::from_secs(5), 10, Some(100), e),
            "  ETA 42 seconds"
        );
    }
}
