//! `shardsmith audit RUN_DIR`: every checkpoint of a run verified, the newest intact one
//! named, pointer files checked. A run in an object store is surveyed from its listing
//! ([`remote`]); a Hugging Face cache has its snapshots audited ([`hfcache`]).
//!
//! [`Settings::resolve`] checks the arguments and names what `RUN_DIR` is before any
//! data is read; [`run`] audits it; the [`Audited`] outcome renders as the summary and
//! as the `--json` report.

mod hfcache;
mod remote;
mod run;
mod settings;
mod text;

use anyhow::Result;

pub use hfcache::CacheAudit;
pub use run::{Audited, RunAudit, run};
pub use settings::Settings;

use super::Status;
use crate::args::AuditArgs;
use crate::caller::Caller;
use crate::output::Printer;

/// The command: resolve, run, print.
pub fn main(args: &AuditArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args, Caller::Cli)?;
    match run(&settings, printer)? {
        Audited::Run(audit) => {
            printer.summary(&audit.text(printer.verbose()));
            printer.report(&audit.report());
            Ok(audit.status())
        }
        Audited::Cache(audit) => {
            printer.summary(&audit.text(printer.verbose()));
            printer.report(&audit.report());
            Ok(audit.status())
        }
    }
}
