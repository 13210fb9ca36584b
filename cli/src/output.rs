//! Everything the user sees: progress bars on stderr, summaries or JSON on stdout,
//! warnings and errors on stderr.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use shardsmith_manifest::Classify;

use crate::args::GlobalArgs;
use crate::progress::{Bar, Extra, Progress};
use shardsmith_manifest::ErrorKind;

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

    /// True with `--json` (one report on stdout, no summary).
    pub fn json(&self) -> bool {
        self.json
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
    pub fn report(&self, value: &impl serde::Serialize) {
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

    /// A line on stderr about how the run was set up (not with --quiet).
    pub fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// Per-item detail on stderr with --verbose.
    pub fn detail(&self, text: &str) {
        if self.verbose() {
            eprintln!("{text}");
        }
    }
}

impl Progress for Printer {
    /// A bar hidden unless stderr is a terminal and progress is wanted.
    fn bytes_bar_with(&self, what: &str, extra: Extra) -> Bar {
        if self.progress {
            Bar::new(what, extra)
        } else {
            Bar::hidden()
        }
    }
}

/// Seconds as shown in summaries.
pub fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The summary lines every writing command ends with: where the manifest is and its
/// root digest.
pub fn manifest_lines(out: &mut String, manifest: &str, root: &str) {
    out.push_str(&format!("  manifest  {manifest}\n"));
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

/// What `--dedup` left out, for a summary: the count and bytes, then the first three
/// with the key (or place) each repeats. `noun` names the items (`sample`, `document`).
pub fn duplicates_line(duplicates: &shardsmith_manifest::Duplicates, noun: &str) -> String {
    if duplicates.count == 0 {
        return "  duplicates none\n".into();
    }
    let mut out = format!(
        "  duplicates {} {noun}(s) ({}) left out: the same bytes as an earlier {noun}\n",
        duplicates.count,
        crate::size::human_bytes(duplicates.bytes)
    );
    for d in duplicates.first.iter().take(3) {
        out.push_str(&format!("    {} (same as {})\n", d.key, d.of));
    }
    if duplicates.count > 3 {
        out.push_str(&format!(
            "    ... {} more (the manifest lists the first {})\n",
            duplicates.count - 3,
            shardsmith_manifest::MAX_LISTED_DUPLICATES
        ));
    }
    out
}

/// An error with a `hint:` line after it (how to go on). The error stays in the chain, so
/// `--json` still reports its kind and path.
#[derive(Debug)]
pub struct Hinted {
    pub error: anyhow::Error,
    pub hint: String,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}\nhint: {}", self.error, self.hint)
    }
}

impl std::error::Error for Hinted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.error.as_ref())
    }
}

/// An error the command itself finds before any work (a missing path, flags that do
/// not fit together), with the kind and path `--json` reports.
#[derive(Debug)]
pub struct CliError {
    pub kind: ErrorKind,
    pub path: Option<String>,
    pub message: String,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// Returns from the function with a [`CliError`] of `kind` about no one path: a check
/// the command makes itself, e.g. `refuse!(Setting, "--jobs must be at least 1")`.
/// `kind` names an [`ErrorKind`], the one vocabulary `--json` reports (see
/// `cli/README.md`).
macro_rules! refuse {
    ($kind:ident, $($message:tt)+) => {
        return Err($crate::output::CliError {
            kind: shardsmith_manifest::ErrorKind::$kind,
            path: None,
            message: format!($($message)+),
        }
        .into())
    };
}
pub(crate) use refuse;

/// An error of `kind` about `path`, for the checks the CLI itself makes: the same kind
/// a library error of that cause has.
pub fn fail(kind: ErrorKind, path: impl std::fmt::Display, message: String) -> anyhow::Error {
    CliError {
        kind,
        path: Some(path.to_string()),
        message,
    }
    .into()
}

/// `path` must exist (a `not_found` error naming it as `role`, e.g. "input", otherwise).
pub fn need_path(path: &std::path::Path, role: &str) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    let shown = path.display().to_string();
    Err(CliError {
        kind: ErrorKind::NotFound,
        message: format!("{role} `{shown}` does not exist"),
        path: Some(shown),
    }
    .into())
}

/// `path` must be a directory: `not_found` when nothing is there, else `not_a_directory`.
pub fn need_directory(path: &std::path::Path) -> anyhow::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    let shown = path.display().to_string();
    let (kind, message) = if std::fs::symlink_metadata(path).is_err() {
        (ErrorKind::NotFound, format!("`{shown}` does not exist"))
    } else {
        (
            ErrorKind::NotADirectory,
            format!("`{shown}` is not a directory"),
        )
    };
    Err(CliError {
        kind,
        path: Some(shown),
        message,
    }
    .into())
}

/// The stable kind and the path of a typed error of one of the libraries (or of the
/// CLI's own checks), or `None` for an untyped cause.
pub fn typed(cause: &(dyn std::error::Error + 'static)) -> Option<(ErrorKind, Option<String>)> {
    macro_rules! try_types {
        ($($ty:ty),*) => {
            $(if let Some(e) = cause.downcast_ref::<$ty>() {
                return Some((e.kind(), e.path()));
            })*
        };
    }
    try_types!(
        shardsmith_pack::Error,
        shardsmith_tokens::Error,
        shardsmith_shard::Error,
        shardsmith_store::Error,
        shardsmith_manifest::Error,
        shardsmith_signing::Error,
        shardsmith_checkpoint::Error
    );
    if let Some(e) = cause.downcast_ref::<CliError>() {
        Some((e.kind, e.path.clone()))
    } else if cause.downcast_ref::<std::io::Error>().is_some() {
        Some((ErrorKind::Io, None))
    } else {
        None
    }
}

/// The object store failure behind `err`, if one: its kind (`storage` or
/// `credentials`) and location, from any error of the chain or a store error inside an
/// `io::Error` of it.
pub fn storage_cause(err: &anyhow::Error) -> Option<(ErrorKind, Option<String>)> {
    err.chain().find_map(|cause| {
        let (kind, path) = typed(cause)
            .filter(|(kind, _)| *kind != ErrorKind::Io)
            .or_else(|| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .and_then(|io| io.get_ref())
                    .and_then(|inner| inner.downcast_ref::<shardsmith_store::Error>())
                    .map(|store| (store.kind(), store.path()))
            })?;
        matches!(kind, ErrorKind::Storage | ErrorKind::Credentials).then_some((kind, path))
    })
}

/// The stable kind of `err` and the path it is about: those of its first typed cause,
/// or of a failed store behind it whatever wrapped it (a writer's `io::Error`, a
/// format's error: one kind for it across commands). Checks of the arguments themselves
/// carry no typed error: `usage`.
pub fn classify(err: &anyhow::Error) -> (ErrorKind, Option<String>) {
    storage_cause(err)
        .or_else(|| err.chain().find_map(typed))
        .unwrap_or((ErrorKind::Usage, None))
}

/// What `--json` prints when a command could not run (exit 2): one object on stdout
/// with the error's stable kind, its message (the causes joined, each once), the path it
/// is about when there is one, and the hint when there is one.
pub fn error_report<'a>(
    command: &'a str,
    err: &anyhow::Error,
    message: &str,
) -> crate::report::Error<'a> {
    let hint = err
        .chain()
        .find_map(|cause| cause.downcast_ref::<Hinted>())
        .map(|h| h.hint.clone());
    let (kind, path) = classify(err);
    let message = match message.split_once("\nhint: ") {
        Some((m, _)) => m.to_string(),
        None => message.to_string(),
    };
    crate::report::Error {
        command,
        error: crate::report::ErrorDetail {
            hint,
            kind,
            message,
            path,
        },
        exit_code: 2,
        version: crate::report::VERSION,
    }
}
