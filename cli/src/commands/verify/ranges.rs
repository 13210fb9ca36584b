//! `verify --range`: the ranges resolved and checked against the manifest before any
//! data is read, so that a file the manifest does not list, bytes past its end or a
//! file without chunk digests stop the command (exit 2) instead of falling back to a
//! whole check.

use std::ops::Range;

use anyhow::{Context as _, Result};
use shardsmith_manifest::verify::plan_ranges;
use shardsmith_manifest::{Error, ErrorKind, MANIFEST_FILE, Manifest};

use crate::args::VerifyArgs;
use crate::caller::Caller;
use crate::output::{fail, refuse};

/// Every `--range` as a file and bytes, open ends resolved with the sizes the manifest
/// records; checks that cannot be combined with a partial read are refused.
pub(super) fn resolve(args: &VerifyArgs, caller: Caller) -> Result<Vec<(String, Range<u64>)>> {
    let flag = caller.option("range");
    for (other, given) in [
        (caller.switch("scan-values"), args.scan_values),
        (caller.option("signature"), args.signature.is_some()),
    ] {
        if given {
            refuse!(
                Usage,
                "{flag} reads only the chunks of the ranges given, and {other} needs every file read whole: run them separately"
            );
        }
    }
    crate::output::need_path(&args.path, "path")?;
    if !args.path.is_dir() {
        refuse!(
            Usage,
            "{flag} checks files of a dataset directory against its manifest, and `{}` is not a directory: give the directory that holds the file (and its {MANIFEST_FILE}), with {flag} NAME:START..END",
            args.path.display()
        );
    }
    let manifest_path = args
        .manifest
        .clone()
        .unwrap_or_else(|| args.path.join(MANIFEST_FILE));
    let bytes = match std::fs::read(&manifest_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let shown = manifest_path.display().to_string();
            return Err(fail(
                ErrorKind::NotFound,
                &shown,
                format!(
                    "{flag} checks bytes against the chunk digests of the manifest, and `{shown}` does not exist; verify without {flag}, or name the manifest with {}",
                    caller.option("manifest")
                ),
            ));
        }
        Err(e) => return Err(Error::io("reading manifest", &manifest_path, e).into()),
    };
    let (manifest, _) = Manifest::parse(&bytes, &manifest_path)
        .with_context(|| format!("{flag} needs the manifest's chunk digests"))?;
    let mut ranges = Vec::with_capacity(args.range.len());
    for arg in &args.range {
        let file = arg.file.trim_start_matches("./");
        let size = manifest
            .files
            .iter()
            .find(|entry| entry.path == file)
            .map_or(0, |entry| entry.size);
        let range = (
            file.to_string(),
            arg.start.unwrap_or(0)..arg.end.unwrap_or(size),
        );
        plan_ranges(&manifest, std::slice::from_ref(&range))
            .map_err(|e| anyhow::Error::new(e).context(format!("{flag} `{}`", arg.text)))?;
        ranges.push(range);
    }
    Ok(ranges)
}
