//! `shardsmith diff A B`: two checkpoints compared tensor by tensor
//! (`shardsmith_checkpoint::tensors::diff`), rendered as a summary or `--json`.
//!
//! [`Settings::resolve`] reads and checks the `--map` rules before a checkpoint is
//! opened; [`run`] compares; the [`Diffed`] outcome renders as the summary
//! ([`Diffed::text`]) and as the `--json` report ([`Diffed::report`]).

mod run;
mod text;

use anyhow::Result;

pub use run::{Diffed, Settings, run};

use super::Status;
use crate::args::DiffArgs;
use crate::output::Printer;

/// The command: resolve, run, print.
pub fn main(args: &DiffArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args)?;
    let diffed = run(&settings)?;
    printer.summary(&diffed.text());
    printer.report(&diffed.report());
    Ok(diffed.status())
}
