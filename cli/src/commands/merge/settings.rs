//! `merge`'s settings: where OUTPUT is and which parts it names.

use std::path::PathBuf;

use anyhow::Result;
use shardsmith_store::Location;

use crate::args::MergeArgs;
use crate::output::refuse;

/// What `merge` joins, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    /// OUTPUT, as given.
    pub output: PathBuf,
    pub(super) location: Location,
    pub(super) parts: Parts,
}

/// The parts named on the command line (none: every part OUTPUT holds, or the tasks of
/// a split run).
#[derive(Debug)]
pub(super) enum Parts {
    /// Local part directories, as given.
    Local(Vec<PathBuf>),
    /// Prefixes directly inside a remote OUTPUT.
    Remote(Vec<String>),
}

impl Parts {
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Parts::Local(parts) => parts.is_empty(),
            Parts::Remote(names) => names.is_empty(),
        }
    }
}

impl Settings {
    /// A local OUTPUT must be a directory; a remote one's parts must be prefixes
    /// directly inside it.
    pub fn resolve(args: &MergeArgs) -> Result<Self> {
        let location = crate::storage::location(&args.output)?;
        let parts = match &location {
            Location::Local(path) => {
                crate::output::need_directory(path)?;
                Parts::Local(args.parts.clone())
            }
            Location::Remote(remote) => {
                let base = format!("{}/", remote.url(""));
                let names = args
                    .parts
                    .iter()
                    .map(|p| {
                        let text = p.to_string_lossy();
                        let name = text.strip_prefix(&base).unwrap_or(&text);
                        if name.is_empty() || name.contains('/') {
                            refuse!(
                                Merge,
                                "part `{text}` must be a prefix directly inside `{}`",
                                remote.url("")
                            );
                        }
                        Ok(name.to_string())
                    })
                    .collect::<Result<Vec<_>>>()?;
                Parts::Remote(names)
            }
        };
        Ok(Self {
            output: args.output.clone(),
            location,
            parts,
        })
    }
}
