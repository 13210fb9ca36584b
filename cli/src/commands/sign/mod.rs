//! `shardsmith sign PATH --private-key KEY`: an OpenSSF Model Signing bundle over every
//! file, from the same single read that verifies them.
//!
//! [`Settings::resolve`] checks the arguments before anything is read; [`run`] reads
//! the key, verifies the files and signs them; the [`Signed`] outcome renders as the
//! summary and as the `--json` report.

mod check;
mod run;

use anyhow::Result;

pub use check::{SignatureCheck, load_public, signature_line};
pub use run::{Settings, Signed, run};

use super::Status;
use crate::args::SignArgs;
use crate::output::Printer;

/// The command: resolve, run, print.
pub fn main(args: &SignArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args)?;
    let signed = run(&settings, printer)?;
    printer.summary(&signed.text());
    if let Some(report) = signed.refused_report() {
        printer.report(&report);
    }
    if let Some(report) = signed.signed_report() {
        printer.report(&report);
    }
    Ok(signed.status())
}
