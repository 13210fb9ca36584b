//! `shardsmith cat DATASET KEY [FIELD]`: one field's bytes, or the sample as a tar.
//!
//! The shard is found through the manifest's first and last key of each shard: the
//! shards whose range holds KEY are read first, one by one; then, if the key was not
//! there (no manifest, a shuffled dataset whose ranges say nothing), every other shard
//! in order until the key is found. Only the shards opened are read.

use std::io::{Read, Write};

use anyhow::{Context, Result};
use shardsmith_shard::content::Validation;
use shardsmith_shard::sample::{Loaded, SampleListing, SampleSource, SampleSpec};

use super::open::{self, Dataset, Shards};
use super::settings::Settings;
use crate::args::CatArgs;
use crate::commands::Status;
use crate::output::refuse;
use crate::output::{CliError, Printer};
use shardsmith_manifest::ErrorKind;

/// The command: DATASET resolved, the sample found and written to stdout; with -v, the
/// files opened to find it and the bytes read.
pub fn main(args: &CatArgs, printer: &Printer) -> Result<Status> {
    if printer.json() {
        refuse!(
            Usage,
            "--json does not apply to `cat`: what it writes to stdout is the sample's own bytes"
        );
    }
    let settings = Settings::resolve(&args.data)?;
    let mut out = std::io::stdout().lock();
    run(
        &settings,
        &args.key,
        args.field.as_deref(),
        &mut out,
        &|reads| printer.detail(&reads),
    )?;
    Ok(Status::Clean)
}

/// Writes the sample `key` of DATASET to `out`: the one `field`'s bytes, or the sample
/// as a tar. `reads` is told which files were opened and how many bytes were read, once
/// the sample was written or found missing.
pub fn run(
    settings: &Settings,
    key: &str,
    field: Option<&str>,
    out: &mut dyn Write,
    reads: &dyn Fn(String),
) -> Result<()> {
    let shown = settings.shown();
    let Dataset::Shards(shards) = open::open(settings)? else {
        refuse!(
            BadInput,
            "`{shown}` holds token files or a checkpoint, not samples: `cat` reads WebDataset, MDS and Parquet shards"
        );
    };
    let report = || {
        reads(format!(
            "opened {}; {} bytes read",
            match shards.counter.opened() {
                o if o.is_empty() => "nothing".to_string(),
                o => o.join(", "),
            },
            shards.counter.bytes_read()
        ));
    };
    let Some((source, listing, index)) = find(&shards, key)? else {
        report();
        return Err(CliError {
            kind: ErrorKind::NotFound,
            path: Some(shown.clone()),
            message: format!("no sample `{key}` in {shown}"),
        }
        .into());
    };
    let sample = &listing.samples[index];
    let chosen = match field {
        Some(field) => Some(
            sample
                .fields
                .iter()
                .position(|f| &*f.ext == field)
                .ok_or_else(|| no_field(&shown, sample, field))?,
        ),
        None => None,
    };
    write_sample(source.as_ref(), &listing, index, chosen, out)?;
    out.flush().context("writing to stdout")?;
    report();
    Ok(())
}

/// Writes sample `index` of `listing` to `out`: field `chosen`'s bytes, or every field
/// as a member of a tar.
fn write_sample(
    source: &dyn SampleSource,
    listing: &SampleListing,
    index: usize,
    chosen: Option<usize>,
    out: &mut dyn Write,
) -> Result<()> {
    let sample = &listing.samples[index];
    let key = &sample.key;
    let mut buf = Vec::new();
    let mut reader = source.reader(&listing.samples[index..=index], Validation::None)?;
    let loaded = match reader.load(0, &mut buf)? {
        Ok(loaded) => loaded,
        Err(skips) => {
            let why: Vec<String> = skips
                .iter()
                .map(|s| format!("{}: {}", s.path, s.reason))
                .collect();
            refuse!(
                BadRecord,
                "sample `{key}` cannot be read: {}",
                why.join("; ")
            );
        }
    };
    let mut fields: Vec<Box<dyn Read + '_>> = match loaded {
        Loaded::Memory(ranges) => ranges
            .into_iter()
            .map(|(s, e)| Box::new(&buf[s..e]) as Box<dyn Read>)
            .collect(),
        Loaded::Streams(streams) => streams
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn Read>)
            .collect(),
    };
    match chosen {
        Some(i) => {
            std::io::copy(&mut fields[i], out).context("writing the field to stdout")?;
        }
        None => {
            for (field, data) in sample.fields.iter().zip(fields.iter_mut()) {
                let name = format!("{}.{}", sample.key, field.ext);
                write_member(out, &name, field.size, data)?;
            }
            out.write_all(&[0u8; 1024])
                .context("writing the tar to stdout")?;
        }
    }
    Ok(())
}

/// The sample has no field `field`: say which it has.
fn no_field(shown: &str, sample: &SampleSpec, field: &str) -> anyhow::Error {
    let has: Vec<&str> = sample.fields.iter().map(|f| &*f.ext).collect();
    CliError {
        kind: ErrorKind::NotFound,
        path: Some(shown.to_string()),
        message: format!(
            "sample `{}` has no field `{field}` (it has {})",
            sample.key,
            has.join(", ")
        ),
    }
    .into()
}

/// The source that holds `key` and the sample's index in its listing, or `None`.
fn find(shards: &Shards, key: &str) -> Result<Option<Found>> {
    let Some(manifest) = shards.manifest.as_ref().filter(|_| shards.only.is_none()) else {
        return search(shards.open(None)?, key);
    };
    let listed: Vec<&shardsmith_manifest::FileEntry> = manifest
        .files
        .iter()
        .filter(|f| f.samples.is_some_and(|n| n > 0))
        .collect();
    if listed.is_empty() {
        return search(shards.open(None)?, key);
    }
    let holds = |f: &shardsmith_manifest::FileEntry| match (&f.first_key, &f.last_key) {
        (Some(first), Some(last)) => first.as_str() <= key && key <= last.as_str(),
        _ => false,
    };
    let (likely, rest): (Vec<_>, Vec<_>) = listed.into_iter().partition(|f| holds(f));
    for file in likely.into_iter().chain(rest) {
        if let Some(found) = search(shards.open(Some(&file.path))?, key)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The source that holds the sample, its listing, and the sample's index in it.
type Found = (Box<dyn SampleSource>, SampleListing, usize);

fn search(source: Box<dyn SampleSource>, key: &str) -> Result<Option<Found>> {
    let listing = source.samples()?;
    Ok(listing
        .samples
        .iter()
        .position(|s| s.key == key)
        .map(|i| (source, listing, i)))
}

/// One ustar member, through the shard writer's header (a GNU long-name record first
/// when the name does not fit).
fn write_member(out: &mut dyn Write, name: &str, size: u64, data: &mut dyn Read) -> Result<()> {
    use shardsmith_shard::webdataset::{write_member_header, write_padding};
    let err = "writing the tar to stdout";
    write_member_header(out, name, size).context(err)?;
    let copied = std::io::copy(&mut data.take(size), out).context(err)?;
    if copied != size {
        refuse!(
            BadRecord,
            "field `{name}` ended after {copied} of its {size} bytes"
        );
    }
    write_padding(out, size).context(err)?;
    Ok(())
}
