//! Everything the user sees: progress bars on stderr, summaries or JSON on stdout,
//! warnings and errors on stderr.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::args::GlobalArgs;

/// How output is shown, decided once from the global flags and the terminal.
#[derive(Clone, Copy, Debug)]
pub struct Printer {
    quiet: bool,
    json: bool,
    verbose: bool,
    progress: bool,
}

impl Printer {
    pub fn new(global: &GlobalArgs) -> Self {
        let progress = !global.quiet
            && !global.no_progress
            && std::env::var_os("SHARDSMITH_NO_PROGRESS").is_none()
            && std::io::stderr().is_terminal();
        Self {
            quiet: global.quiet,
            json: global.json,
            verbose: global.verbose,
            progress,
        }
    }

    pub fn verbose(&self) -> bool {
        self.verbose && !self.quiet
    }

    /// A byte progress bar, hidden unless stderr is a terminal and progress is wanted.
    pub fn bytes_bar(&self, what: &str) -> ProgressBar {
        if !self.progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:.bold} {wide_bar:.cyan/blue} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
            )
            .expect("template is valid")
            .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    /// Prints the human summary on stdout (not with --quiet or --json).
    pub fn summary(&self, text: &str) {
        if self.quiet || self.json {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// Prints the JSON report on stdout (only with --json).
    pub fn report(&self, value: &serde_json::Value) {
        if !self.json {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer_pretty(&mut out, value);
        let _ = writeln!(out);
        let _ = out.flush();
    }

    /// A warning on stderr (shown even with --quiet: it may mean lost data).
    pub fn warn(&self, text: &str) {
        eprintln!("warning: {text}");
    }

    /// Per-item detail on stderr with --verbose.
    pub fn detail(&self, text: &str) {
        if self.verbose() {
            eprintln!("{text}");
        }
    }
}

/// Seconds as shown in summaries.
pub fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The summary lines every writing command ends with: where the manifest is and its
/// root digest.
pub fn manifest_lines(out: &mut String, manifest: &std::path::Path, root: &str) {
    out.push_str(&format!("  manifest  {}\n", manifest.display()));
    out.push_str(&format!("  root      {root}\n"));
}

/// The "resumed" summary line, when an interrupted run's outputs were kept.
pub fn resumed_line(out: &mut String, resumed: usize, unit: &str) {
    if resumed > 0 {
        out.push_str(&format!(
            "  resumed   {resumed} finished {unit} of an interrupted run kept\n"
        ));
    }
}

/// The first five left-out inputs under `heading`, then how many more (`more`: where
/// the rest are listed, e.g. " in the manifest").
pub fn skipped_lines(
    out: &mut String,
    heading: &str,
    skipped: &[shardsmith_manifest::Skipped],
    total: usize,
    more: &str,
) {
    out.push_str(&format!("  skipped   {heading}:\n"));
    for skip in skipped.iter().take(5) {
        out.push_str(&format!("    {}: {}\n", skip.path, skip.reason));
    }
    if total > 5 {
        out.push_str(&format!("    ... {} more{more}\n", total - 5));
    }
}

/// An error message with a `hint:` line after it (how to go on).
#[derive(Debug)]
pub struct Hinted {
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\nhint: {}", self.message, self.hint)
    }
}

impl std::error::Error for Hinted {}
