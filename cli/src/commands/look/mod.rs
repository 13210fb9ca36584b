//! `shardsmith ls`, `cat` and `stats`: looking inside a dataset (WebDataset, MDS,
//! Parquet shards; token files; checkpoints) without unpacking it.

mod cat;
mod ls;
mod open;
mod stats;
mod text;

use anyhow::Result;

use super::Status;
use crate::args::LookCommand;
use crate::output::Printer;

pub fn run(command: &LookCommand, printer: &Printer) -> Result<Status> {
    match command {
        LookCommand::Ls(args) => ls::run(args, printer),
        LookCommand::Cat(args) => cat::run(args, printer),
        LookCommand::Stats(args) => stats::run(args, printer),
    }
}
