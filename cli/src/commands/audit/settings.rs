//! `audit`'s settings: what the run directory is, checked before any data is read.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use shardsmith_store::Location;

use crate::args::AuditArgs;
use crate::caller::Caller;
use crate::output::refuse;

/// What `audit` checks, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    /// The run directory or prefix as given.
    pub run_dir: PathBuf,
    pub(super) target: Target,
    pub(super) scratch: PathBuf,
    pub(super) scan_values: bool,
}

/// What the run directory is.
#[derive(Debug)]
pub(super) enum Target {
    Local,
    Remote(Arc<shardsmith_store::object::Remote>),
    HfCache,
}

impl Settings {
    /// Checks that the run directory exists (or parses its URL) and, for a run in an
    /// object store, that the scratch directory does.
    pub fn resolve(args: &AuditArgs, caller: Caller) -> Result<Self> {
        caller.need_local(&args.run_dir, "audit")?;
        let scratch = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
        let target = match crate::storage::location(&args.run_dir)? {
            Location::Remote(remote) => {
                crate::output::need_directory(&scratch)?;
                Target::Remote(remote)
            }
            Location::Local(_) => {
                crate::output::need_directory(&args.run_dir)?;
                if shardsmith_checkpoint::hfcache::cache_repos(&args.run_dir).is_none() {
                    Target::Local
                } else if caller == Caller::Python {
                    let shown = args.run_dir.display();
                    refuse!(
                        Unsupported,
                        "`{shown}` is a Hugging Face cache: shardsmith.verify() checks it (every blob against its name, every link and ref); for the audit of its snapshots use the CLI (`shardsmith audit {shown}`)"
                    );
                } else {
                    Target::HfCache
                }
            }
        };
        Ok(Self {
            run_dir: args.run_dir.clone(),
            target,
            scratch,
            scan_values: args.scan_values,
        })
    }
}
