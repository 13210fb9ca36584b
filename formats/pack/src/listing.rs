//! Stage 1 of [`crate::pack`]: the input listed and grouped into samples, the samples
//! neither readers nor the format can take left out with the reason, then shuffled;
//! and the summary of the input the manifest records.

use rayon::prelude::*;
use sha2::{Digest as _, Sha256};
use shardsmith_manifest::{InputSummary, Skipped, hex};
use shardsmith_shard::sample::SampleSource;
use shardsmith_shard::{FormatChoice, SampleSpec, ShardFormat};

use crate::left_out::{first_cause, validation_note};
use crate::{Error, PackSettings, Result, shuffle};

/// The samples to pack, in the order they go into shards, with the format built for
/// them.
pub(crate) struct Listed {
    pub(crate) samples: Vec<SampleSpec>,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) format: Box<dyn ShardFormat>,
}

/// Stage 1: lists the samples, leaves out those neither readers nor the format can
/// take, then shuffles.
pub(crate) fn list(
    source: &dyn SampleSource,
    choice: &FormatChoice,
    settings: &PackSettings,
) -> Result<Listed> {
    let listing = source.samples()?;
    let mut skipped = listing.skipped;
    let mut samples = listing.samples;
    // With images, the source applied `--fields` to the input's names.
    if let Some(fields) = settings
        .fields
        .as_ref()
        .filter(|_| settings.images.is_none())
    {
        for sample in &mut samples {
            sample.fields.retain(|f| fields.contains(&*f.ext));
        }
        samples.retain(|s| !s.fields.is_empty());
    }
    // Two samples with one key would be merged or confused by readers: refused here,
    // for every kind of input, naming both.
    shardsmith_shard::keys::check_unique(source, &samples, settings.key_prefix)?;
    let format = choice.build(&samples, source.suggested_encodings())?;
    refine(source, format.as_ref(), &mut samples, &mut skipped);
    skipped.sort();
    skipped.dedup();
    if settings.strict
        && let Some(first) = first_cause(&skipped)
    {
        return Err(Error::Strict {
            path: first.path.clone(),
            reason: first.reason.clone(),
            count: skipped.len(),
        });
    }
    if samples.is_empty() {
        let detail = match skipped.first() {
            Some(first) => format!(
                ": all {} input file(s) were left out; first: `{}` {}{}",
                skipped.len(),
                first.path,
                first.reason,
                validation_note(settings.validation)
            ),
            None => ": it holds no files".into(),
        };
        return Err(shardsmith_shard::Error::EmptyInput {
            root: source.describe(),
            detail,
        }
        .into());
    }
    if let Some(seed) = settings.shuffle_seed {
        if let Some(why) = source.shuffle_refusal() {
            return Err(Error::Setting(format!("--shuffle: {why}")));
        }
        shuffle::shuffle(&mut samples, seed);
    }
    Ok(Listed {
        samples,
        skipped,
        format,
    })
}

/// Leaves out samples the format cannot hold and sets the encoded size of fields the
/// format sizes by their header (read in parallel).
pub(crate) fn refine(
    source: &dyn SampleSource,
    format: &dyn ShardFormat,
    samples: &mut Vec<SampleSpec>,
    skipped: &mut Vec<Skipped>,
) {
    let outcomes: Vec<Option<String>> = samples
        .par_iter_mut()
        .map(|sample| {
            if let Some(reason) = format.refuse(sample) {
                return Some(reason);
            }
            for i in 0..sample.fields.len() {
                let n = format.peek_len(&sample.fields[i].ext);
                if n == 0 {
                    continue;
                }
                let field = &sample.fields[i];
                let sized = match source.head(sample, field, n) {
                    Ok(head) => format
                        .encoded_len(&field.ext, field.size, &head)
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                match sized {
                    Ok(encoded) => sample.fields[i].encoded = encoded,
                    Err(reason) => {
                        return Some(format!("field `{}`: {reason}", sample.fields[i].ext));
                    }
                }
            }
            None
        })
        .collect();
    let mut kept = Vec::with_capacity(samples.len());
    for (sample, outcome) in std::mem::take(samples).into_iter().zip(outcomes) {
        match outcome {
            None => kept.push(sample),
            Some(reason) => skipped.extend(sample.fields.iter().map(|f| Skipped {
                path: source.field_path(&sample, f),
                reason: reason.clone(),
            })),
        }
    }
    *samples = kept;
}

/// What the manifest records of the input: files, bytes and the SHA-256 of the listing.
/// The listing's lines are made in parallel, in blocks of samples kept in order, and
/// hashed one block after another: the same digest whatever the thread count.
pub(crate) fn input_summary(source: &dyn SampleSource, samples: &[SampleSpec]) -> InputSummary {
    let blocks: Vec<(Vec<u8>, u64, u64)> = samples
        .par_chunks(4096)
        .map(|block| {
            let mut lines = Vec::new();
            let (mut files, mut bytes) = (0u64, 0u64);
            for (sample, field) in block
                .iter()
                .flat_map(|s| s.fields.iter().map(move |f| (s, f)))
            {
                lines.extend_from_slice(source.field_path(sample, field).as_bytes());
                lines.push(0);
                lines.extend_from_slice(field.size.to_string().as_bytes());
                lines.push(b'\n');
                files += 1;
                bytes += field.size;
            }
            (lines, files, bytes)
        })
        .collect();
    let mut hasher = Sha256::new();
    let (mut files, mut bytes) = (0u64, 0u64);
    for (lines, n, size) in &blocks {
        hasher.update(lines);
        files += n;
        bytes += size;
    }
    InputSummary {
        files,
        bytes,
        listing_sha256: hex(&hasher.finalize()),
    }
}
