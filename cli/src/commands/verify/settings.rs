//! `verify`'s settings: what the path is, checked before any data is read.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use shardsmith_store::Location;

use crate::args::VerifyArgs;
use crate::caller::Caller;
use crate::output::fail;
use crate::output::refuse;
use shardsmith_manifest::ErrorKind;

/// What `verify` checks, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    /// The path or URL as given.
    pub path: PathBuf,
    pub(super) target: Target,
    pub(super) manifest: Option<PathBuf>,
    pub(super) signature: Option<(PathBuf, PathBuf)>,
    pub(super) expect_root: Option<String>,
    pub(super) allow_empty: bool,
    pub(super) scan_values: bool,
    /// `--range`: the bytes of each file to check by its chunk digests (open ends
    /// resolved with the manifest's sizes), each checked against the manifest; empty
    /// for a whole check.
    pub(super) ranges: Vec<(String, Range<u64>)>,
}

/// What the path names.
#[derive(Debug)]
pub(super) enum Target {
    /// A local dataset directory or file.
    Local,
    /// A dataset under an object store prefix.
    Remote(Arc<shardsmith_store::object::Remote>),
    /// A local Hugging Face hub cache, or one repository of it.
    HfCache,
}

impl Settings {
    /// Checks the arguments and what the path is, in the order a user fixes them:
    /// the location, the root digest, the path's existence and type.
    pub fn resolve(args: &VerifyArgs, caller: Caller) -> Result<Self> {
        caller.need_local(&args.path, "verify")?;
        let expect_root = match &args.expect_root {
            Some(text) => Some(crate::args::parse_root(text).map_err(|why| {
                anyhow::anyhow!(
                    "invalid value '{text}' for {}: {why}",
                    caller.option("expect-root")
                )
            })?),
            None => None,
        };
        let target = match crate::storage::location(&args.path)? {
            Location::Remote(remote) => {
                if args.manifest.is_some() || args.signature.is_some() {
                    refuse!(
                        Usage,
                        "--manifest and --signature take a local dataset; `shardsmith stage` it first"
                    );
                }
                Target::Remote(remote)
            }
            Location::Local(_) if !args.range.is_empty() => Target::Local,
            Location::Local(_) => local_target(args, caller, expect_root.is_some())?,
        };
        let ranges = match &target {
            _ if args.range.is_empty() => Vec::new(),
            Target::Remote(_) => refuse!(
                Usage,
                "{} takes a local dataset directory; `shardsmith stage` it first",
                caller.option("range")
            ),
            _ => super::ranges::resolve(args, caller)?,
        };
        Ok(Self {
            path: args.path.clone(),
            target,
            manifest: args.manifest.clone(),
            signature: args.signature.clone().zip(args.public_key.clone()),
            expect_root,
            allow_empty: args.allow_empty,
            scan_values: args.scan_values,
            ranges,
        })
    }
}

/// A local path: it must exist and be a directory or a regular file; a Hugging Face
/// cache (without a manifest or signature given) is checked as one.
fn local_target(args: &VerifyArgs, caller: Caller, expect_root: bool) -> Result<Target> {
    crate::output::need_path(&args.path, "path")?;
    if let Ok(meta) = std::fs::metadata(&args.path)
        && !meta.is_dir()
        && !meta.is_file()
    {
        let shown = args.path.display().to_string();
        return Err(fail(
            ErrorKind::NotAFile,
            &shown,
            format!(
                "`{shown}` is neither a directory nor a regular file (a device, a FIFO or a socket): verify checks a dataset directory or one file"
            ),
        ));
    }
    if args.manifest.is_none()
        && args.signature.is_none()
        && shardsmith_checkpoint::hfcache::cache_repos(&args.path).is_some()
    {
        if expect_root {
            refuse!(
                Usage,
                "{} takes a dataset with a manifest; a Hugging Face cache has none",
                caller.option("expect-root")
            );
        }
        return Ok(Target::HfCache);
    }
    Ok(Target::Local)
}
