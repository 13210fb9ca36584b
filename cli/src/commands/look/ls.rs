//! `shardsmith ls DATASET [-l]`: one line per shard, sample, token file or tensor.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde::Serialize;
use shardsmith_checkpoint::listing::TensorEntry;
use shardsmith_manifest::Skipped;
use shardsmith_shard::sample::SampleListing;
use shardsmith_tokens::listing::TokenFileSummary;

use super::open::{self, Dataset, Shards};
use super::settings::Settings;
use super::text::{count, print, table, warn_skipped};
use crate::args::LsArgs;
use crate::commands::Status;
use crate::output::Printer;
use crate::report::{self, VERSION};

/// What `ls` found in DATASET.
pub enum Contents {
    /// Shards, per shard (`sizes`: each file's size) or per sample (`-l`).
    Shards {
        shards: Box<Shards>,
        listing: SampleListing,
        /// Each sample's shard.
        containers: Vec<String>,
        /// Each file's size, when listed per shard.
        sizes: Option<BTreeMap<String, u64>>,
    },
    /// Token files.
    Tokens(Vec<TokenFileSummary>),
    /// Each checkpoint file with its tensors.
    Checkpoint(Vec<(String, Vec<TensorEntry>)>),
}

/// The `--json` report of what `ls` found: one of four shapes.
#[derive(Serialize)]
#[serde(untagged)]
pub enum LsReport<'a> {
    Shards(report::LsShards<'a>),
    Samples(report::LsSamples<'a>),
    Tokens(report::LsTokens<'a>),
    Checkpoint(report::LsCheckpoint<'a>),
}

/// Tells what DATASET is and lists it: per shard, or per sample with `long`.
pub fn run(settings: &Settings, long: bool) -> Result<Contents> {
    Ok(match open::open(settings)? {
        Dataset::Shards(shards) => {
            let source = shards.open(None)?;
            let listing = source.samples()?;
            let containers = listing
                .samples
                .iter()
                .map(|s| source.container(s).unwrap_or_default())
                .collect();
            let sizes = if long { None } else { Some(shards.sizes()?) };
            Contents::Shards {
                shards,
                listing,
                containers,
                sizes,
            }
        }
        Dataset::Tokens(files) => Contents::Tokens(files),
        Dataset::Checkpoint(files) => Contents::Checkpoint(files),
    })
}

impl Contents {
    /// Samples the reader left out.
    pub fn skipped(&self) -> &[Skipped] {
        match self {
            Contents::Shards { listing, .. } => &listing.skipped,
            _ => &[],
        }
    }

    /// The `--json` report.
    pub fn report(&self) -> LsReport<'_> {
        match self {
            Contents::Shards {
                shards,
                listing,
                containers,
                sizes: Some(sizes),
            } => LsReport::Shards(shards_report(shards, listing, containers, sizes)),
            Contents::Shards {
                shards,
                listing,
                containers,
                sizes: None,
            } => LsReport::Samples(samples_report(shards, listing, containers)),
            Contents::Tokens(files) => LsReport::Tokens(report::LsTokens {
                command: "ls",
                files: files
                    .iter()
                    .map(|f| report::TokenFileRow {
                        bytes: f.bytes,
                        documents: f.documents,
                        dtype: f.dtype.name(),
                        format: f.format.name(),
                        path: &f.path,
                        tokens: f.tokens,
                    })
                    .collect(),
                kind: "tokens",
                version: VERSION,
            }),
            Contents::Checkpoint(files) => LsReport::Checkpoint(report::LsCheckpoint {
                command: "ls",
                kind: "checkpoint",
                tensors: files
                    .iter()
                    .flat_map(|(file, tensors)| {
                        tensors.iter().map(move |t| report::TensorRow {
                            bytes: t.bytes,
                            dtype: &t.dtype,
                            file,
                            name: &t.name,
                            shape: &t.shape,
                        })
                    })
                    .collect(),
                version: VERSION,
            }),
        }
    }

    /// The table (and, per shard, a line of totals).
    pub fn text(&self) -> String {
        match self {
            Contents::Shards {
                shards,
                listing,
                containers,
                sizes: Some(sizes),
            } => shards_text(shards, listing, containers, sizes),
            Contents::Shards {
                listing,
                containers,
                sizes: None,
                ..
            } => samples_text(listing, containers),
            Contents::Tokens(files) => {
                let mut rows = vec![header(&["FILE", "FORMAT", "DTYPE", "DOCUMENTS", "TOKENS"])];
                for f in files {
                    rows.push(vec![
                        f.path.clone(),
                        f.format.name().into(),
                        f.dtype.name().into(),
                        f.documents.map_or_else(|| "-".into(), |d| d.to_string()),
                        f.tokens.to_string(),
                    ]);
                }
                table(&rows, &[false, false, false, true, true])
            }
            Contents::Checkpoint(files) => {
                let mut rows = vec![header(&["FILE", "TENSOR", "DTYPE", "SHAPE", "BYTES"])];
                for (file, tensors) in files {
                    for t in tensors {
                        let dims: Vec<String> = t.shape.iter().map(u64::to_string).collect();
                        rows.push(vec![
                            file.clone(),
                            t.name.clone(),
                            t.dtype.clone(),
                            format!("[{}]", dims.join(",")),
                            t.bytes.to_string(),
                        ]);
                    }
                }
                table(&rows, &[false, false, false, false, true])
            }
        }
    }
}

/// The command: resolve, run, print (the samples left out first, as warnings).
pub fn main(args: &LsArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(&args.data)?;
    let contents = run(&settings, args.long)?;
    warn_skipped(printer, contents.skipped());
    if printer.json() {
        printer.report(&contents.report());
    } else {
        print(&contents.text())?;
    }
    Ok(Status::Clean)
}

fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// One shard: its samples are `listing.samples[start..end]`.
struct Group {
    name: String,
    start: usize,
    end: usize,
}

/// Consecutive samples of the same container.
fn groups(containers: &[String]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (i, name) in containers.iter().enumerate() {
        match out.last_mut() {
            Some(g) if &g.name == name => g.end = i + 1,
            _ => out.push(Group {
                name: name.clone(),
                start: i,
                end: i + 1,
            }),
        }
    }
    out
}

/// One row per shard.
struct ShardLine<'a> {
    name: &'a str,
    bytes: u64,
    samples: usize,
    first: &'a str,
    last: &'a str,
    fields: Vec<String>,
}

fn shard_lines<'a>(
    listing: &'a SampleListing,
    containers: &'a [String],
    sizes: &BTreeMap<String, u64>,
) -> Vec<ShardLine<'a>> {
    groups(containers)
        .into_iter()
        .map(|g| {
            let samples = &listing.samples[g.start..g.end];
            let mut fields = BTreeSet::new();
            for s in samples {
                fields.extend(s.fields.iter().map(|f| f.ext.to_string()));
            }
            ShardLine {
                name: &containers[g.start],
                bytes: sizes.get(&g.name).copied().unwrap_or(0),
                samples: samples.len(),
                first: &samples[0].key,
                last: &samples[samples.len() - 1].key,
                fields: fields.into_iter().collect(),
            }
        })
        .collect()
}

fn shards_report<'a>(
    shards: &Shards,
    listing: &'a SampleListing,
    containers: &'a [String],
    sizes: &BTreeMap<String, u64>,
) -> report::LsShards<'a> {
    let lines = shard_lines(listing, containers, sizes);
    report::LsShards {
        command: "ls",
        kind: shards.kind.name(),
        skipped: listing.skipped.len(),
        totals: report::ShardTotals {
            bytes: lines.iter().map(|l| l.bytes).sum(),
            samples: listing.samples.len(),
            shards: lines.len(),
        },
        shards: lines
            .into_iter()
            .map(|l| report::ShardRow {
                bytes: l.bytes,
                fields: l.fields,
                first_key: l.first,
                last_key: l.last,
                name: l.name,
                samples: l.samples,
            })
            .collect(),
        version: VERSION,
    }
}

fn shards_text(
    shards: &Shards,
    listing: &SampleListing,
    containers: &[String],
    sizes: &BTreeMap<String, u64>,
) -> String {
    let lines = shard_lines(listing, containers, sizes);
    let mut rows = vec![header(&[
        "SHARD", "BYTES", "SAMPLES", "FIRST", "LAST", "FIELDS",
    ])];
    for l in &lines {
        rows.push(vec![
            l.name.to_string(),
            l.bytes.to_string(),
            l.samples.to_string(),
            l.first.to_string(),
            l.last.to_string(),
            l.fields.join(","),
        ]);
    }
    let mut text = table(&rows, &[false, true, true, false, false, false]);
    text.push_str(&format!(
        "{} {}, {}, {}, {} bytes\n",
        shards.shown,
        shards.kind.name(),
        count(lines.len(), "shard"),
        count(listing.samples.len(), "sample"),
        lines.iter().map(|l| l.bytes).sum::<u64>()
    ));
    text
}

fn samples_report<'a>(
    shards: &Shards,
    listing: &'a SampleListing,
    containers: &'a [String],
) -> report::LsSamples<'a> {
    report::LsSamples {
        command: "ls",
        kind: shards.kind.name(),
        samples: listing
            .samples
            .iter()
            .zip(containers)
            .map(|(s, shard)| report::SampleRow {
                fields: s.fields.iter().map(|f| (&*f.ext, f.size)).collect(),
                key: &s.key,
                shard,
            })
            .collect(),
        skipped: listing.skipped.len(),
        version: VERSION,
    }
}

fn samples_text(listing: &SampleListing, containers: &[String]) -> String {
    let mut rows = vec![header(&["KEY", "SHARD", "FIELDS"])];
    for (s, shard) in listing.samples.iter().zip(containers) {
        let fields: Vec<String> = s
            .fields
            .iter()
            .map(|f| format!("{}={}", f.ext, f.size))
            .collect();
        rows.push(vec![s.key.clone(), shard.clone(), fields.join(" ")]);
    }
    table(&rows, &[false, false, false])
}
