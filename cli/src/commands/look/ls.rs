//! `shardsmith ls DATASET [-l]`: one line per shard, sample, token file or tensor.

use std::collections::BTreeSet;

use anyhow::Result;
use shardsmith_shard::sample::SampleListing;

use super::open::{self, Dataset, Shards};
use super::text::{count, print, table, warn_skipped};
use crate::args::LsArgs;
use crate::commands::Status;
use crate::output::Printer;
use crate::report::{self, VERSION};

pub fn run(args: &LsArgs, printer: &Printer) -> Result<Status> {
    match open::open(&args.data)? {
        Dataset::Shards(shards) => {
            let source = shards.open(None)?;
            let listing = source.samples()?;
            warn_skipped(printer, &listing.skipped);
            let containers: Vec<String> = listing
                .samples
                .iter()
                .map(|s| source.container(s).unwrap_or_default())
                .collect();
            if args.long {
                samples(&shards, &listing, &containers, printer)
            } else {
                per_shard(&shards, &listing, &containers, printer)
            }
        }
        Dataset::Tokens(files) => {
            if printer.json() {
                printer.report(&report::LsTokens {
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
                });
                return Ok(Status::Clean);
            }
            let mut rows = vec![header(&["FILE", "FORMAT", "DTYPE", "DOCUMENTS", "TOKENS"])];
            for f in &files {
                rows.push(vec![
                    f.path.clone(),
                    f.format.name().into(),
                    f.dtype.name().into(),
                    f.documents.map_or_else(|| "-".into(), |d| d.to_string()),
                    f.tokens.to_string(),
                ]);
            }
            print(&table(&rows, &[false, false, false, true, true]))?;
            Ok(Status::Clean)
        }
        Dataset::Checkpoint(files) => {
            if printer.json() {
                printer.report(&report::LsCheckpoint {
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
                });
                return Ok(Status::Clean);
            }
            let mut rows = vec![header(&["FILE", "TENSOR", "DTYPE", "SHAPE", "BYTES"])];
            for (file, tensors) in &files {
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
            print(&table(&rows, &[false, false, false, false, true]))?;
            Ok(Status::Clean)
        }
    }
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

fn per_shard(
    shards: &Shards,
    listing: &SampleListing,
    containers: &[String],
    printer: &Printer,
) -> Result<Status> {
    let groups = groups(containers);
    let sizes = shards.sizes()?;
    let mut rows = vec![header(&[
        "SHARD", "BYTES", "SAMPLES", "FIRST", "LAST", "FIELDS",
    ])];
    let mut json_shards = Vec::new();
    let mut total_bytes = 0;
    for g in &groups {
        let samples = &listing.samples[g.start..g.end];
        let mut fields = BTreeSet::new();
        for s in samples {
            fields.extend(s.fields.iter().map(|f| f.ext.to_string()));
        }
        let fields: Vec<String> = fields.into_iter().collect();
        let bytes = sizes.get(&g.name).copied().unwrap_or(0);
        total_bytes += bytes;
        let first = &samples[0].key;
        let last = &samples[samples.len() - 1].key;
        rows.push(vec![
            g.name.clone(),
            bytes.to_string(),
            samples.len().to_string(),
            first.clone(),
            last.clone(),
            fields.join(","),
        ]);
        json_shards.push(report::ShardRow {
            bytes,
            fields,
            first_key: first,
            last_key: last,
            name: &g.name,
            samples: samples.len(),
        });
    }
    if printer.json() {
        printer.report(&report::LsShards {
            command: "ls",
            kind: shards.kind.name(),
            shards: json_shards,
            skipped: listing.skipped.len(),
            totals: report::ShardTotals {
                bytes: total_bytes,
                samples: listing.samples.len(),
                shards: groups.len(),
            },
            version: VERSION,
        });
        return Ok(Status::Clean);
    }
    let mut text = table(&rows, &[false, true, true, false, false, false]);
    text.push_str(&format!(
        "{} {}, {}, {}, {} bytes\n",
        shards.shown,
        shards.kind.name(),
        count(groups.len(), "shard"),
        count(listing.samples.len(), "sample"),
        total_bytes
    ));
    print(&text)?;
    Ok(Status::Clean)
}

fn samples(
    shards: &Shards,
    listing: &SampleListing,
    containers: &[String],
    printer: &Printer,
) -> Result<Status> {
    if printer.json() {
        printer.report(&report::LsSamples {
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
        });
        return Ok(Status::Clean);
    }
    let mut rows = vec![header(&["KEY", "SHARD", "FIELDS"])];
    for (s, shard) in listing.samples.iter().zip(containers) {
        let fields: Vec<String> = s
            .fields
            .iter()
            .map(|f| format!("{}={}", f.ext, f.size))
            .collect();
        rows.push(vec![s.key.clone(), shard.clone(), fields.join(" ")]);
    }
    print(&table(&rows, &[false, false, false]))?;
    Ok(Status::Clean)
}
