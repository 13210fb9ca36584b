//! `shardsmith ls`, `cat` and `stats`: looking inside a dataset (WebDataset, MDS,
//! Parquet shards; token files; checkpoints) without unpacking it.

mod cat;
mod counting;
mod ls;
mod open;
mod settings;
mod stats;
mod text;

pub use settings::Settings;

use anyhow::Result;

use super::Status;
use crate::args::LookCommand;
use crate::output::Printer;

/// The command: `ls`, `cat` or `stats`.
pub fn main(command: &LookCommand, printer: &Printer) -> Result<Status> {
    match command {
        LookCommand::Ls(args) => ls::main(args, printer),
        LookCommand::Cat(args) => cat::main(args, printer),
        LookCommand::Stats(args) => stats::main(args, printer),
    }
}
