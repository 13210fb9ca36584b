//! `shardsmith verify PATH`: every check, one read per file, findings as data.
//!
//! [`Settings::resolve`] checks the arguments and names what `PATH` is (a local dataset
//! or file, a dataset in an object store, a Hugging Face cache) before any data is
//! read; [`run`] verifies it; the [`Verified`] outcome renders as the summary
//! ([`Verified::text`]) and as the `--json` report ([`Verified::report`]).

mod ranges;
mod run;
mod settings;
mod text;

use anyhow::Result;

pub(crate) use run::not_a_cache;
pub use run::{Verified, run};
pub use settings::Settings;
pub(crate) use text::tag;

use super::Status;
use crate::args::VerifyArgs;
use crate::caller::Caller;
use crate::output::Printer;

/// The command: resolve, run, print.
pub fn main(args: &VerifyArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args, Caller::Cli)?;
    let verified = run(&settings, printer)?;
    printer.summary(&verified.text());
    printer.report(&verified.report());
    Ok(verified.status())
}
