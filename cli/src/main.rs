//! The `shardsmith` command. Parses arguments, sets up the thread pool, runs one
//! subcommand and maps the outcome to the exit code: 0 success or clean, 1 verification
//! found problems, 2 could not run.

mod alloc;
mod args;
mod commands;
mod output;
mod size;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::commands::Status;
use crate::output::Printer;

fn main() -> ExitCode {
    let cli = Cli::parse();
    alloc::configure(match &cli.command {
        Command::Pack(args) => commands::pack::uses_arrow(args),
        Command::Tokenize(_) => true,
        _ => false,
    });
    let printer = Printer::new(&cli.global);
    match run(&cli, &printer) {
        Ok(status) => ExitCode::from(status as u8),
        Err(err) => {
            if err
                .chain()
                .filter_map(|e| e.downcast_ref::<std::io::Error>())
                .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli, printer: &Printer) -> anyhow::Result<Status> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(jobs) = cli.global.jobs {
        if jobs == 0 {
            anyhow::bail!("--jobs must be at least 1");
        }
        pool = pool.num_threads(jobs);
    }
    pool.build_global()?;
    match &cli.command {
        Command::Pack(args) => commands::pack::run(args, printer),
        Command::Tokenize(args) => commands::tokenize::run(args, printer),
        Command::Manifest(args) => commands::manifest::run(args, printer),
        Command::Verify(args) => commands::verify::run(args, printer),
        Command::Merge(args) => commands::merge::run(args, printer),
        Command::Audit(args) => commands::audit::run(args, printer),
        Command::Sign(args) => commands::sign::run(args, printer),
    }
}
