//! `shardsmith index DATASET --for wids,dali,energon`: the readers' indexes for
//! WebDataset shards that exist already, from one read of each shard, shards read in
//! parallel.
//!
//! [`Settings::resolve`] checks DATASET and the readers asked for before anything is
//! read; [`run`] reads the shards and writes the index (nothing when a shard is
//! damaged); the [`Indexed`] outcome renders as the summary and the `--json` report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rayon::prelude::*;
use shardsmith_shard::format::{DatasetFile, write_files};
use shardsmith_shard::webdataset::readers::{IndexKinds, Listing, ListingWriter, sort_key};
use shardsmith_shard::webdataset::{WIDS_INDEX, WidsError, WidsShard, index_shard_from, wids};

use super::Status;
use crate::args::IndexArgs;
use crate::output::{Printer, refuse, seconds};
use crate::report;
use crate::size::human_bytes;
use shardsmith_manifest::{FileEntry, MANIFEST_FILE, Manifest, walk};
use shardsmith_store::{LocalDir, Location, OutputSink, finish};

use crate::storage;

/// What `index` reads and writes, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    /// DATASET as given.
    dataset: PathBuf,
    /// Where it is: a local directory or an object store prefix.
    location: Location,
    /// The plain tar shards, relative to DATASET with `/`, sorted.
    shards: Vec<String>,
    /// Compressed shards beside them, left out (no reader reads them through an index).
    compressed: Vec<String>,
    /// The indexes to write.
    kinds: IndexKinds,
}

impl Settings {
    /// DATASET must be a local directory or an object store prefix holding plain `.tar`
    /// shards; `--for` must name readers whose index is built (`wids`, `dali`,
    /// `energon`, `all`).
    pub fn resolve(args: &IndexArgs) -> Result<Self> {
        let kinds = match IndexKinds::parse(&args.readers) {
            Ok(kinds) => kinds,
            Err(e) => refuse!(Usage, "--for: {e}"),
        };
        let location = storage::location(&args.dataset)?;
        let (mut shards, mut compressed) = match &location {
            Location::Local(path) => {
                crate::output::need_directory(path)?;
                shards_below(path)?
            }
            Location::Remote(_) => objects_below(&location)?,
        };
        shards.sort();
        if shards.is_empty() {
            match compressed.first() {
                Some(name) => refuse!(
                    Setting,
                    "`{}` holds only compressed shards (`{name}`): no reader reads compressed shards through an index (wids maps plain .tar files; DALI's and Energon's indexes are offsets into them)",
                    args.dataset.display()
                ),
                None => refuse!(NotFound, "`{}` holds no .tar shard", args.dataset.display()),
            }
        }
        compressed.sort();
        Ok(Self {
            dataset: args.dataset.clone(),
            location,
            shards,
            compressed,
            kinds,
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
    let names = walked.files.into_iter().filter_map(|file| {
        file.rel
            .to_str()
            .map(|r| r.replace(std::path::MAIN_SEPARATOR, "/"))
    });
    Ok(split_shards(names))
}

/// The plain `.tar` objects under an object store prefix and, apart, the compressed
/// tars; objects under a hidden name part (`.nv-meta/`) are left out.
fn objects_below(location: &Location) -> Result<(Vec<String>, Vec<String>)> {
    let listing = storage::source(location).list()?;
    if let Some(skip) = listing.skipped.first() {
        anyhow::bail!("listing `{}`: {}", skip.path, skip.reason);
    }
    let names = listing
        .files
        .into_iter()
        .map(|file| file.rel)
        .filter(|rel| !rel.split('/').any(|part| part.starts_with('.')));
    Ok(split_shards(names))
}

/// Plain `.tar` names and, apart, compressed tar names.
fn split_shards(names: impl Iterator<Item = String>) -> (Vec<String>, Vec<String>) {
    let (mut shards, mut compressed) = (Vec::new(), Vec::new());
    for rel in names {
        if rel.ends_with(".tar") {
            shards.push(rel);
        } else if [".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"]
            .iter()
            .any(|ext| rel.ends_with(ext))
        {
            compressed.push(rel);
        }
    }
    (shards, compressed)
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
    /// The files written (none when a shard is damaged).
    written: Vec<String>,
    /// The manifest's root before and after the index was listed in it, when the
    /// dataset has one.
    roots: Option<(String, String)>,
    /// Wall-clock time.
    elapsed: Duration,
}

/// Reads every shard once (in parallel) and writes the indexes asked for, unless a
/// shard is damaged. Shards are read in Energon's order, a window at a time, and each
/// one's DALI and Energon files are written as its turn comes to a staging folder
/// (inside DATASET when it is local, else in the system's temporary directory), moved
/// or uploaded into place once every shard was read: memory holds the listings of one
/// window of shards, whatever the dataset's size.
pub fn run(settings: &Settings) -> Result<Indexed> {
    let started = Instant::now();
    let kinds = settings.kinds;
    let mut order = settings.shards.clone();
    order.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    let source = storage::source(&settings.location);
    let output = storage::Output::create(&settings.location)?;
    let staging_in = match &settings.location {
        Location::Local(path) => path.clone(),
        Location::Remote(_) => std::env::temp_dir(),
    };
    let staging = tempfile::Builder::new()
        .prefix(".shardsmith-index-")
        .tempdir_in(&staging_in)
        .with_context(|| format!("making a staging folder in {}", staging_in.display()))?;
    let staged = LocalDir::create(staging.path())?;
    let mut writer = if kinds.needs_listing() {
        Some(ListingWriter::new(kinds, staging.path())?)
    } else {
        None
    };
    let mut shards = Vec::with_capacity(order.len());
    let mut damaged = Vec::new();
    let mut entries = Vec::new();
    let window = 8 * rayon::current_num_threads().max(1);
    for chunk in order.chunks(window) {
        let results: Vec<Result<(WidsShard, Option<Listing>), WidsError>> = chunk
            .par_iter()
            .map(|url| {
                let mut input = source.open(url).map_err(|e| WidsError::Read {
                    path: source.display(url),
                    source: e.into(),
                })?;
                index_shard_from(&mut input, url, kinds.needs_listing())
            })
            .collect();
        let mut files = Vec::new();
        for result in results {
            match result {
                Ok((shard, listing)) => {
                    if let (Some(writer), Some(listing), true) =
                        (&mut writer, listing, damaged.is_empty())
                    {
                        files.extend(writer.add(&shard.url, &listing)?);
                    }
                    shards.push(shard);
                }
                Err(e @ WidsError::Damaged(_)) => damaged.push(e.to_string()),
                Err(e) => return Err(e.into()),
            }
        }
        // The window's files, several at a time (each is synced: latency, not work).
        entries.extend(write_files(&staged, files)?);
    }
    let mut roots = None;
    if damaged.is_empty() {
        let mut files = Vec::new();
        if kinds.wids {
            files.push(DatasetFile::new(WIDS_INDEX, wids::index_bytes(&mut shards)));
        }
        if let Some(writer) = writer {
            files.extend(writer.finish()?);
        }
        entries.extend(write_files(&staged, files)?);
        place(&output, staging.path(), &entries)?;
        roots = list_in_manifest(output.sink(), &entries)?;
    } else {
        entries.clear();
    }
    // Sorted by URL (index_bytes sorts when wids is asked for; the summary wants it too).
    shards.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(Indexed {
        dataset: settings.dataset.clone(),
        shards,
        damaged,
        written: entries.into_iter().map(|e| e.path).collect(),
        roots,
        elapsed: started.elapsed(),
    })
}

/// Moves (local) or uploads (object store) the staged files into the dataset.
fn place(output: &storage::Output, staging: &Path, entries: &[FileEntry]) -> Result<()> {
    for entry in entries {
        let staged = staging.join(&entry.path);
        match output {
            storage::Output::Local(dir) => {
                let target = dir.path().join(&entry.path);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                std::fs::rename(&staged, &target)
                    .with_context(|| format!("moving the index into {}", target.display()))?;
            }
            storage::Output::Remote(_) => {
                let mut file = std::fs::File::open(&staged)
                    .with_context(|| format!("reading {}", staged.display()))?;
                finish::write_entry_from(output.sink(), &entry.path, &mut file)?;
            }
        }
    }
    Ok(())
}

/// When DATASET has a manifest, lists the index files written (`entries`, hashed while
/// they were written) in it: their entries added (or replaced in place), the manifest
/// sealed again, `SHA256SUMS` and `manifest.json` rewritten after them, so `verify`
/// keeps passing. Returns the root before and after.
fn list_in_manifest(
    sink: &dyn OutputSink,
    entries: &[FileEntry],
) -> Result<Option<(String, String)>> {
    let Some(text) = sink.read(MANIFEST_FILE)? else {
        return Ok(None);
    };
    let shown = format!("{}/{MANIFEST_FILE}", sink.describe());
    let (mut manifest, _) = Manifest::parse(&text, Path::new(&shown))?;
    let before = manifest.root_sha256.clone();
    let sorted = manifest.files.windows(2).all(|w| w[0].path <= w[1].path);
    // An index the manifest lists keeps its place: the manifest of a dataset indexed
    // again is the one its `pack --index` wrote.
    for entry in entries {
        match manifest.files.iter_mut().find(|f| f.path == entry.path) {
            Some(listed) => *listed = entry.clone(),
            None => manifest.files.push(entry.clone()),
        }
    }
    if sorted {
        manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    finish::seal(sink, &mut manifest)?;
    Ok(Some((before, manifest.root_sha256)))
}

/// The command: resolve, run, print; exit 1 when a shard is damaged.
pub fn main(args: &IndexArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(args)?;
    if let Some(first) = settings.compressed.first() {
        printer.warn(&format!(
            "{} compressed shard(s) left out of the indexes (`{first}`...): no reader reads compressed shards through an index",
            settings.compressed.len()
        ));
    }
    let indexed = run(&settings)?;
    let Indexed {
        dataset,
        shards,
        damaged,
        written,
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
        let kinds = settings.kinds;
        let mut lines = String::new();
        if kinds.wids {
            lines.push_str(&format!(
                "  wids      {}\n",
                dataset.join(WIDS_INDEX).display()
            ));
        }
        if kinds.dali {
            lines.push_str(&format!(
                "  dali      {} (one per shard)\n",
                dataset.join("dali").display()
            ));
        }
        if kinds.energon {
            lines.push_str(&format!(
                "  energon   {} and a .tar.idx beside each shard\n",
                dataset.join(".nv-meta").display()
            ));
        }
        printer.summary(&format!(
            "indexed {} shards ({}, {samples} samples) for {} in {}\n{lines}{listed}",
            shards.len(),
            human_bytes(bytes),
            kinds.names().join(", "),
            seconds(*elapsed),
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
        indexes: written.clone(),
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
