//! `shardsmith merge OUTPUT [PART...]`: one dataset from the parts of a split run.
//!
//! [`Settings::resolve`] names OUTPUT and its parts before anything is read; [`run`]
//! merges them (or finishes a run split into tasks); the [`Merged`] outcome renders as
//! the summary and as the `--json` report.

mod run;
mod settings;

use anyhow::Result;

pub use run::{Merged, run};
pub use settings::Settings;

use super::Status;
use crate::args::MergeArgs;
use crate::output::Printer;

/// The command: resolve, run, print.
pub fn main(args: &MergeArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args)?;
    let merged = run(&settings)?;
    for warning in merged.warnings() {
        printer.warn(warning);
    }
    printer.summary(&merged.text());
    printer.report(&merged.report());
    Ok(Status::Clean)
}
