//! `shardsmith index DATASET --for wids`: a reader's index for WebDataset shards that
//! exist already, from one read of each shard, shards read in parallel.
//!
//! [`Settings::resolve`] checks DATASET and the readers asked for before anything is
//! read; [`run`] reads the shards and writes the index (nothing when a shard is
//! damaged); the [`Indexed`] outcome renders as the summary and the `--json` report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rayon::prelude::*;
use shardsmith_shard::webdataset::{WIDS_INDEX, WidsError, WidsShard, index_shard, wids};

use super::Status;
use crate::args::IndexArgs;
use crate::output::{Printer, refuse, seconds};
use crate::report;
use crate::size::human_bytes;
use crate::storage;
use shardsmith_manifest::{MANIFEST_FILE, Manifest, walk};
use shardsmith_store::{LocalDir, finish};

/// What `index` reads and writes, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    dataset: PathBuf,
    /// The plain tar shards, relative to DATASET with `/`, sorted.
    shards: Vec<String>,
    /// Compressed shards beside them, left out (wids cannot read them).
    compressed: Vec<String>,
}

impl Settings {
    /// DATASET must be a local directory holding plain `.tar` shards; `--for` must name
    /// readers whose index is built (`wids`, `all`).
    pub fn resolve(args: &IndexArgs) -> Result<Self> {
        for reader in args.readers.split(',').map(str::trim) {
            if !matches!(reader, "wids" | "all") {
                refuse!(
                    Usage,
                    "--for: unknown reader `{reader}`: expected wids or all (DALI and Energon indexes are not written yet)"
                );
            }
        }
        if args.dataset.to_string_lossy().contains("://") {
            refuse!(
                Usage,
                "index reads local directories only for now: stage the dataset first (`shardsmith stage`)"
            );
        }
        crate::output::need_directory(&args.dataset)?;
        let (mut shards, mut compressed) = shards_below(&args.dataset)?;
        shards.sort();
        if shards.is_empty() {
            match compressed.first() {
                Some(name) => refuse!(
                    Setting,
                    "`{}` holds only compressed shards (`{name}`): wids cannot read compressed shards (it maps plain .tar files)",
                    args.dataset.display()
                ),
                None => refuse!(NotFound, "`{}` holds no .tar shard", args.dataset.display()),
            }
        }
        compressed.sort();
        Ok(Self {
            dataset: args.dataset.clone(),
            shards,
            compressed,
        })
    }
}

/// The plain `.tar` files below `root` and, apart, the compressed tars, relative with
/// `/`; hidden entries are left out. An entry that cannot be read stops the command:
/// an index must not leave a shard out unsaid.
fn shards_below(root: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let hidden = |rel: &Path, _dir: bool| {
        !rel.file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
    };
    let walked = walk::walk(root, &hidden)?;
    if let Some(skip) = walked.skipped.first() {
        anyhow::bail!(
            "reading `{}`: {}",
            root.join(&skip.rel).display(),
            skip.reason
        );
    }
    let (mut shards, mut compressed) = (Vec::new(), Vec::new());
    for file in walked.files {
        let Some(rel) = file
            .rel
            .to_str()
            .map(|r| r.replace(std::path::MAIN_SEPARATOR, "/"))
        else {
            continue;
        };
        if rel.ends_with(".tar") {
            shards.push(rel);
        } else if [".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"]
            .iter()
            .any(|ext| rel.ends_with(ext))
        {
            compressed.push(rel);
        }
    }
    Ok((shards, compressed))
}

/// What an index run did.
#[derive(Debug)]
pub struct Indexed {
    /// The dataset, as given.
    dataset: PathBuf,
    /// Its shards' entries, sorted by URL (those that could be read).
    shards: Vec<WidsShard>,
    /// Why each damaged shard cannot be indexed; when any, nothing was written.
    damaged: Vec<String>,
    /// The manifest's root before and after the index was listed in it, when the
    /// dataset has one.
    roots: Option<(String, String)>,
    /// Wall-clock time.
    elapsed: Duration,
}

/// Reads every shard once (in parallel) and writes `wids-index.json`, unless a shard is
/// damaged.
pub fn run(settings: &Settings) -> Result<Indexed> {
    let started = Instant::now();
    let results: Vec<Result<WidsShard, WidsError>> = settings
        .shards
        .par_iter()
        .map(|url| index_shard(&settings.dataset.join(url), url))
        .collect();
    let mut shards = Vec::with_capacity(results.len());
    let mut damaged = Vec::new();
    for result in results {
        match result {
            Ok(shard) => shards.push(shard),
            Err(e @ WidsError::Damaged(_)) => damaged.push(e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    let bytes = wids::index_bytes(&mut shards);
    let mut roots = None;
    if damaged.is_empty() {
        roots = list_in_manifest(&settings.dataset, &bytes)?;
        if roots.is_none() {
            storage::write_small(&settings.dataset.join(WIDS_INDEX), &bytes)?;
        }
    }
    Ok(Indexed {
        dataset: settings.dataset.clone(),
        shards,
        damaged,
        roots,
        elapsed: started.elapsed(),
    })
}

/// When DATASET has a manifest, writes the index listed in it: its entry added (or
/// replaced), the manifest sealed again, `SHA256SUMS` and `manifest.json` rewritten
/// after the index, so `verify` keeps passing. Returns the root before and after.
fn list_in_manifest(dataset: &Path, bytes: &[u8]) -> Result<Option<(String, String)>> {
    let path = dataset.join(MANIFEST_FILE);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let (mut manifest, _) = Manifest::parse(&text, &path)?;
    let before = manifest.root_sha256.clone();
    let sink = LocalDir::create(dataset)?;
    let entry = finish::write_entry(&sink, WIDS_INDEX, bytes)?;
    let sorted = manifest.files.windows(2).all(|w| w[0].path <= w[1].path);
    manifest.files.retain(|f| f.path != WIDS_INDEX);
    manifest.files.push(entry);
    if sorted {
        manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    finish::seal(&sink, &mut manifest)?;
    Ok(Some((before, manifest.root_sha256)))
}

/// The command: resolve, run, print; exit 1 when a shard is damaged.
pub fn main(args: &IndexArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args)?;
    if let Some(first) = settings.compressed.first() {
        printer.warn(&format!(
            "{} compressed shard(s) left out of the index (`{first}`...): wids cannot read compressed shards",
            settings.compressed.len()
        ));
    }
    let indexed = run(&settings)?;
    let Indexed {
        dataset,
        shards,
        damaged,
        roots,
        elapsed,
    } = &indexed;
    let bytes: u64 = shards.iter().map(|s| s.filesize).sum();
    let samples: u64 = shards.iter().map(|s| s.nsamples).sum();
    for error in damaged {
        eprintln!("error: {error}");
    }
    if damaged.is_empty() {
        let listed = match roots {
            Some((before, after)) if before == after => {
                format!("  manifest  lists it already as written; root {after}\n")
            }
            Some((before, after)) => format!(
                "  manifest  lists it now; root {after} (was {before}: record the new one where the old was pinned)\n"
            ),
            None => String::new(),
        };
        printer.summary(&format!(
            "indexed {} shards ({}, {samples} samples) for wids in {}\n  wids      {}\n{listed}",
            shards.len(),
            human_bytes(bytes),
            seconds(*elapsed),
            dataset.join(WIDS_INDEX).display(),
        ));
    } else {
        eprintln!(
            "error: {} damaged shard(s) of {}: no index written",
            damaged.len(),
            shards.len() + damaged.len()
        );
    }
    printer.report(&report::Index {
        bytes,
        command: "index",
        damaged: damaged.clone(),
        dataset: dataset.display().to_string(),
        indexes: if damaged.is_empty() {
            vec![WIDS_INDEX.to_string()]
        } else {
            Vec::new()
        },
        root_sha256: roots.as_ref().map(|(_, after)| after.clone()),
        samples,
        seconds: elapsed.as_secs_f64(),
        shards: shards.len(),
        version: report::VERSION,
    });
    Ok(if damaged.is_empty() {
        Status::Clean
    } else {
        Status::Problems
    })
}
