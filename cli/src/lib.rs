//! The shardsmith application: the `shardsmith` command as a library. The binary
//! (`main.rs`) only sets the allocator; [`parse`] reads the arguments and [`execute`]
//! sets up the thread pool, runs one subcommand and maps the outcome to the exit code:
//! 0 success or clean, 1 verification found problems, 2 could not run.
//!
//! Each command is a module of [`commands`]: its settings, resolved and checked from the
//! arguments before any data is read, a `run` that returns what happened, and a report
//! ([`report`]) that renders as text or as the `--json` object. The Python API
//! (`cli/python`) calls the same settings and runs.

pub mod args;
pub mod caller;
pub mod commands;
mod interrupt;
pub mod output;
pub mod progress;
pub mod report;
pub mod size;
pub mod storage;
pub mod task;
mod version;

use std::process::ExitCode;

use clap::FromArgMatches;

use crate::args::{Cli, Command};
use crate::commands::Status;
use crate::output::Printer;
use crate::output::refuse;
use shardsmith_shard::definition::Buffers;

/// The command line, parsed; or, when clap refuses it (or prints `--help` or
/// `--version`), the exit code after its message was printed.
pub fn parse() -> Result<Cli, ExitCode> {
    args::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(usage_error)
}

/// How long the allocator keeps memory freed by a command before returning it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepFreed {
    /// Returned at once.
    No,
    /// The allocator's default delay (about a second).
    AWhile,
    /// Long enough (seconds) to be used again by the next shard.
    AcrossShards,
}

/// How long the allocator should keep freed memory for the command:
/// a while when it allocates and frees large buffers over and over (Arrow for Parquet,
/// tokenize's batches, decoded images of megabytes each), long enough to span shards
/// when a shard's whole Parquet row group is built in memory, not at all otherwise.
pub fn keeps_freed_memory(cli: &Cli) -> KeepFreed {
    match &cli.command {
        Command::Pack(args) if args.format.def().buffers() == Buffers::Shards => {
            KeepFreed::AcrossShards
        }
        Command::Pack(args) if commands::pack::uses_arrow(args) || args.images.any() => {
            KeepFreed::AWhile
        }
        Command::Tokenize(_) => KeepFreed::AWhile,
        _ => KeepFreed::No,
    }
}

/// Runs the parsed command: its output on stdout and stderr, and the exit code.
pub fn execute(cli: &Cli) -> ExitCode {
    let printer = Printer::new(&cli.global);
    interrupt::install();
    match run(cli, &printer) {
        Ok(status) => ExitCode::from(status as u8),
        Err(err) => {
            if err
                .chain()
                .filter_map(|e| e.downcast_ref::<std::io::Error>())
                .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let text = message(&err);
            eprintln!("error: {text}");
            if cli.global.json {
                json_line(&output::error_report(cli.command.name(), &err, &text));
            }
            ExitCode::from(2)
        }
    }
}

/// `SHARDSMITH_PARQUET_DECODE_LIMIT` (a size: `2GiB`): the most decompressed Parquet
/// pages shardsmith holds at once, for files with larger values than the default allows.
fn parquet_decode_limit() -> anyhow::Result<()> {
    let name = shardsmith_shard::parquet::DECODE_LIMIT_VAR;
    if let Some(text) = std::env::var_os(name) {
        let bytes = text
            .to_str()
            .ok_or_else(|| anyhow::anyhow!("{name} is not UTF-8"))
            .and_then(|t| size::parse_size(t).map_err(|e| anyhow::anyhow!("{name}: {e}")))?;
        shardsmith_shard::parquet::set_decode_limit(bytes);
    }
    Ok(())
}

/// Arguments clap rejects: its message on stderr as usual (exit 2; `--help` and
/// `--version` print and exit 0), and with `--json` anywhere on the line also the
/// error object on stdout, so a `| jq` pipeline gets an answer.
fn usage_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let informational = matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !informational && args.iter().any(|a| a == "--json") {
        let command = args
            .iter()
            .find(|a| Command::NAMES.contains(&a.as_str()))
            .map_or("", String::as_str);
        let text = err.render().to_string();
        let body = text.split("\n\nUsage:").next().unwrap_or_default();
        let first = body
            .trim_start_matches("error: ")
            .split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        json_line(&report::Error {
            command,
            error: report::ErrorDetail {
                hint: None,
                kind: shardsmith_manifest::ErrorKind::Usage,
                message: first,
                path: None,
            },
            exit_code: 2,
            version: report::VERSION,
        });
    }
    let _ = err.print();
    ExitCode::from(if informational { 0 } else { 2 })
}

fn json_line(value: &impl serde::Serialize) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
    let _ = out.flush();
}

fn run(cli: &Cli, printer: &Printer) -> anyhow::Result<Status> {
    parquet_decode_limit()?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(jobs) = cli.global.jobs {
        if jobs == 0 {
            refuse!(Setting, "--jobs must be at least 1");
        }
        pool = pool.num_threads(jobs);
    }
    pool.build_global()?;
    storage::configure(&cli.global)?;
    match &cli.command {
        Command::Pack(args) => commands::pack::run(args, printer),
        Command::Tokenize(args) => commands::tokenize::run(args, printer),
        Command::Manifest(args) => commands::manifest::main(args, printer),
        Command::Verify(args) => commands::verify::main(args, printer),
        Command::Merge(args) => commands::merge::main(args, printer),
        Command::Audit(args) => commands::audit::main(args, printer),
        Command::Sign(args) => commands::sign::main(args, printer),
        Command::Stage(args) => commands::stage::main(args, printer),
        Command::List(args) => commands::list::main(args, printer),
        Command::Index(args) => commands::index::main(args, printer),
        Command::Diff(args) => commands::diff::main(args, printer),
        Command::Completions(args) => commands::shell::completions(args),
        Command::Man(args) => commands::shell::man(args),
        Command::Look(look) => commands::look::main(look, printer),
    }
}

/// The stable kind (as `--json` reports it) and the message of an error a command
/// failed with (exit 2).
pub fn refusal(err: &anyhow::Error) -> (shardsmith_manifest::ErrorKind, String) {
    (output::classify(err).0, message(err))
}

/// The error and its causes on one line, each cause said once: library errors already
/// name their cause (`creating `out`: Read-only file system (os error 30)`), and
/// repeating it as the next link of the chain would print the OS error twice.
pub fn message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
