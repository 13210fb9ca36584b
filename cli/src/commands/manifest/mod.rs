//! `shardsmith manifest DIR`: hash an existing directory into manifest.json + SHA256SUMS.
//!
//! [`Settings::resolve`] checks the arguments and the directory (it exists, holds no
//! unfinished run, has no manifest unless `--force`) before any file is hashed; [`run`]
//! hashes and writes; the [`Manifested`] outcome renders as the summary and as the
//! `--json` report. A prefix in an object store is hashed as its objects stream
//! ([`remote`]).

mod remote;
mod run;
mod settings;
mod written;

use anyhow::Result;

pub use run::run;
pub use settings::Settings;
pub use written::Manifested;

use super::Status;
use crate::args::ManifestArgs;
use crate::caller::Caller;
use crate::output::Printer;

/// The command: resolve, run, print.
pub fn main(args: &ManifestArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args, Caller::Cli)?;
    let written = run(&settings, printer)?;
    for warning in written.warnings() {
        printer.warn(&warning);
    }
    printer.summary(&written.text());
    printer.report(&written.report());
    Ok(Status::Clean)
}
