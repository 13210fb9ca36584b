//! `shardsmith stats DATASET`: samples, fields and how often each occurs, each field's
//! size distribution, duplicate keys; with `--dedup`, duplicate contents (the one mode
//! that reads the fields' bytes).
//!
//! Percentiles are exact, by nearest rank over the sorted sizes: one `u64` per field per
//! sample is kept (80 MB for ten million samples of one field), on top of the listing
//! itself.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use shardsmith_manifest::{Duplicates, Skipped};
use shardsmith_pack::dedup::duplicate_contents;

use super::open::{self, Dataset};
use super::settings::Settings;
use super::text::{count, print, table, warn_skipped};
use crate::args::StatsArgs;
use crate::commands::Status;
use crate::output::Printer;
use crate::output::refuse;
use crate::report::{self, FieldStats, VERSION};

/// Duplicate keys named in the report.
const SHOWN_DUPLICATES: usize = 5;

/// The value at quantile `q` of `sorted` (nearest rank: the smallest value with at
/// least `q` of the values at or below it).
fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn distribution(mut sizes: Vec<u64>) -> FieldStats {
    sizes.sort_unstable();
    FieldStats {
        samples: sizes.len(),
        bytes: sizes.iter().sum(),
        min: sizes[0],
        median: nearest_rank(&sizes, 0.5),
        p99: nearest_rank(&sizes, 0.99),
        max: sizes[sizes.len() - 1],
    }
}

/// What `stats` counted.
#[derive(Debug)]
pub struct Counted {
    shown: String,
    kind: &'static str,
    samples: usize,
    shards: usize,
    /// Each field's size distribution, by field name.
    fields: Vec<(String, FieldStats)>,
    /// Keys used more than once, in order of their second use.
    duplicates: Vec<String>,
    /// Samples whose key was used before.
    repeats: usize,
    /// Samples the reader left out.
    pub skipped: Vec<Skipped>,
    /// With `--dedup`: samples whose fields repeat an earlier sample's.
    contents: Option<Duplicates>,
}

/// Reads every sample's listing of DATASET (no field bytes) and counts.
pub fn run(settings: &Settings, dedup: bool) -> Result<Counted> {
    let shown = settings.shown();
    let Dataset::Shards(shards) = open::open(settings)? else {
        refuse!(
            BadInput,
            "`{shown}` holds token files or a checkpoint, not samples: `stats` reads WebDataset, MDS and Parquet shards (`ls` lists token files and tensors)"
        );
    };
    let source = shards.open(None)?;
    let listing = source.samples()?;
    let mut sizes: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut duplicates: Vec<String> = Vec::new();
    let mut repeats = 0usize;
    let mut containers = 0usize;
    let mut last_container = None;
    for sample in &listing.samples {
        for field in &sample.fields {
            sizes.entry(&field.ext).or_default().push(field.size);
        }
        let count = seen.entry(&sample.key).or_insert(0);
        *count += 1;
        if *count == 2 {
            duplicates.push(sample.key.clone());
        }
        if *count >= 2 {
            repeats += 1;
        }
        let container = source.container(sample);
        if container != last_container {
            containers += 1;
            last_container = container;
        }
    }
    let contents = if dedup {
        Some(duplicate_contents(source.as_ref(), &listing.samples)?)
    } else {
        None
    };
    let fields = sizes
        .into_iter()
        .map(|(name, sizes)| (name.to_string(), distribution(sizes)))
        .collect();
    Ok(Counted {
        shown: shards.shown.clone(),
        kind: shards.kind.name(),
        samples: listing.samples.len(),
        shards: containers,
        fields,
        duplicates,
        repeats,
        skipped: listing.skipped,
        contents,
    })
}

impl Counted {
    fn bytes(&self) -> u64 {
        self.fields.iter().map(|(_, f)| f.bytes).sum()
    }

    /// The `--json` report.
    pub fn report(&self) -> report::Stats<'_> {
        let duplicates = &self.duplicates;
        report::Stats {
            bytes: self.bytes(),
            command: "stats",
            duplicate_contents: self.contents.as_ref().map(|d| report::DuplicateContents {
                bytes: d.bytes,
                count: d.count,
                first: &d.first[..d.first.len().min(SHOWN_DUPLICATES)],
            }),
            duplicate_keys: report::DuplicateKeys {
                count: duplicates.len(),
                first: &duplicates[..duplicates.len().min(SHOWN_DUPLICATES)],
                repeats: self.repeats,
            },
            fields: self
                .fields
                .iter()
                .map(|(name, f)| (name.as_str(), *f))
                .collect(),
            kind: self.kind,
            samples: self.samples,
            shards: self.shards,
            skipped: self.skipped.len(),
            version: VERSION,
        }
    }

    /// The table and the lines about duplicate keys and samples left out.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{} {}: {} in {}, {} bytes of fields\n",
            self.shown,
            self.kind,
            count(self.samples, "sample"),
            count(self.shards, "shard"),
            self.bytes()
        );
        let mut rows = vec![
            ["FIELD", "SAMPLES", "BYTES", "MIN", "MEDIAN", "P99", "MAX"]
                .map(String::from)
                .to_vec(),
        ];
        for (name, f) in &self.fields {
            rows.push(vec![
                name.to_string(),
                f.samples.to_string(),
                f.bytes.to_string(),
                f.min.to_string(),
                f.median.to_string(),
                f.p99.to_string(),
                f.max.to_string(),
            ]);
        }
        text.push_str(&table(&rows, &[false, true, true, true, true, true, true]));
        text.push_str(&self.duplicates_line());
        if let Some(d) = &self.contents {
            text.push_str(&contents_line(d));
        }
        if !self.skipped.is_empty() {
            text.push_str(&format!("left out by the reader: {}\n", self.skipped.len()));
        }
        text
    }

    fn duplicates_line(&self) -> String {
        let duplicates = &self.duplicates;
        if duplicates.is_empty() {
            return "duplicate keys: none\n".into();
        }
        let first: Vec<String> = duplicates
            .iter()
            .take(SHOWN_DUPLICATES)
            .map(|k| format!("`{k}`"))
            .collect();
        let more = if duplicates.len() > SHOWN_DUPLICATES {
            format!(", ... {} more", duplicates.len() - SHOWN_DUPLICATES)
        } else {
            String::new()
        };
        format!(
            "duplicate keys: {} ({} repeats): {}{more}\n",
            duplicates.len(),
            self.repeats,
            first.join(", ")
        )
    }
}

/// What `--dedup` found.
fn contents_line(d: &Duplicates) -> String {
    if d.count == 0 {
        return "duplicate contents: none\n".into();
    }
    let first: Vec<String> = d
        .first
        .iter()
        .take(SHOWN_DUPLICATES)
        .map(|d| format!("`{}` (= `{}`)", d.key, d.of))
        .collect();
    let more = if d.count > SHOWN_DUPLICATES as u64 {
        format!(", ... {} more", d.count - SHOWN_DUPLICATES as u64)
    } else {
        String::new()
    };
    format!(
        "duplicate contents: {} ({} bytes) repeat an earlier sample's fields: {}{more}\n",
        count(d.count as usize, "sample"),
        d.bytes,
        first.join(", ")
    )
}

/// The command: resolve, run, print (the samples left out first, as warnings).
pub fn main(args: &StatsArgs, printer: &Printer) -> Result<Status> {
    let settings = Settings::resolve(&args.data)?;
    let counted = run(&settings, args.dedup)?;
    warn_skipped(printer, &counted.skipped);
    if printer.json() {
        printer.report(&counted.report());
    } else {
        print(&counted.text())?;
    }
    Ok(Status::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let f = distribution((1..=100).rev().collect());
        assert_eq!((f.min, f.median, f.p99, f.max), (1, 50, 99, 100));
        let f = distribution(vec![7]);
        assert_eq!((f.min, f.median, f.p99, f.max), (7, 7, 7, 7));
    }
}
