//! `pack --dedup`: a sample whose fields (names and bytes, all of them; the key apart)
//! equal an earlier sample's in plan order is left out, and listed with the key of the
//! first one, which is kept.
//!
//! Decided in the one pass that writes the shards, so the input is read once. Each
//! writer hashes a sample's fields as it loads them ([`shardsmith_shard::digest`]) and
//! registers the digest in [`Seen`], which keeps the earliest sample (in plan order) of
//! each digest. A sample whose digest an earlier sample already registered is compared
//! byte for byte with it ([`same_content`]) and left out when equal. Shards are written
//! in parallel, so a writer may meet a duplicate before the earlier sample's writer has
//! registered it; the committer, which takes the shards in plan order, sees every earlier
//! digest by then, checks each kept sample again, and has a shard that kept a duplicate
//! written again without it. The output therefore depends only on the plan, not on
//! `--jobs` or timing. Memory: one entry (a 16-byte digest and an index, about 48 bytes
//! with the map's own) per kept sample.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use shardsmith_manifest::{Duplicate, Duplicates};
use shardsmith_shard::SampleSpec;
use shardsmith_shard::content::Validation;
use shardsmith_shard::digest::{Digest, HashingReader, memory_digest, same_bytes, sample_digest};
use shardsmith_shard::sample::{Loaded, SampleSource};

use crate::load::WriteContext;
use crate::{Error, Result};

const PARTS: usize = 64;

/// The earliest sample (index in plan order) of each content digest registered so far.
pub(crate) struct Seen {
    parts: Vec<Mutex<HashMap<Digest, usize>>>,
}

impl Default for Seen {
    fn default() -> Self {
        Self {
            parts: (0..PARTS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl Seen {
    fn part(&self, digest: Digest) -> MutexGuard<'_, HashMap<Digest, usize>> {
        self.parts[(digest % PARTS as u128) as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers sample `index` of `digest`; returns the earliest sample registered with
    /// that digest before it, if any (then `index` is not registered).
    pub(crate) fn register(&self, digest: Digest, index: usize) -> Option<usize> {
        match self.part(digest).entry(digest) {
            Entry::Occupied(mut first) => {
                if *first.get() < index {
                    return Some(*first.get());
                }
                first.insert(index);
                None
            }
            Entry::Vacant(slot) => {
                slot.insert(index);
                None
            }
        }
    }

    /// The earliest sample registered with `digest`.
    pub(crate) fn first(&self, digest: Digest) -> Option<usize> {
        self.part(digest).get(&digest).copied()
    }
}

/// The digests of a written plan's samples, by index in the plan: the ones packed and
/// the ones left out as duplicates. Kept in the plan's record (as 32 hex digits), so
/// that a resumed run registers what an interrupted one packed; a record whose digests
/// do not parse is not resumed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDigests {
    /// `(index in the plan, digest)` of each packed sample.
    #[serde(with = "as_hex")]
    pub kept: Vec<(usize, Digest)>,
    /// The same for each sample left out as a duplicate.
    #[serde(with = "as_hex")]
    pub dropped: Vec<(usize, Digest)>,
}

/// `(index, digest)` pairs recorded as `[index, "32 hex digits"]`.
mod as_hex {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use shardsmith_shard::digest::Digest;

    pub(super) fn serialize<S: Serializer>(
        pairs: &[(usize, Digest)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let text: Vec<(usize, String)> = pairs
            .iter()
            .map(|(index, digest)| (*index, format!("{digest:032x}")))
            .collect();
        text.serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(usize, Digest)>, D::Error> {
        Vec::<(usize, String)>::deserialize(deserializer)?
            .into_iter()
            .map(|(index, text)| {
                (text.len() == 32)
                    .then(|| Digest::from_str_radix(&text, 16).ok())
                    .flatten()
                    .map(|digest| (index, digest))
                    .ok_or_else(|| D::Error::custom(format!("not a digest: {text:?}")))
            })
            .collect()
    }
}

/// What a shard's writer needs to leave duplicates out.
pub(crate) struct PlanDedup<'a> {
    /// The digests registered so far.
    pub seen: &'a Seen,
    /// Every sample of the run, in plan order (the plan's are a slice of them).
    pub all: &'a [SampleSpec],
    /// Index in `all` of the plan's first sample.
    pub start: usize,
    /// Samples of the plan known to be duplicates (index in the plan → digest): the
    /// committer's finding, when it has the shard written again.
    pub exclude: BTreeMap<usize, Digest>,
}

/// True when samples `a` and `b` hold the same fields, byte for byte (names, order and
/// bytes); a sample that cannot be read again is not the same.
///
/// `held` is `b`'s fields when the caller has them in memory (then `b` is not read again).
pub(crate) fn same_content(
    ctx: &WriteContext<'_>,
    a: &SampleSpec,
    b: &SampleSpec,
    held: Option<&[&[u8]]>,
) -> Result<bool> {
    let same_fields = a.fields.len() == b.fields.len()
        && a.fields
            .iter()
            .zip(&b.fields)
            .all(|(x, y)| x.ext == y.ext && x.size == y.size);
    if !same_fields {
        return Ok(false);
    }
    let (mut buf_a, mut buf_b) = (Vec::new(), Vec::new());
    let mut reader_a = ctx
        .source
        .reader(std::slice::from_ref(a), Validation::None)?;
    let Ok(loaded_a) = reader_a.load(0, &mut buf_a)? else {
        return Ok(false);
    };
    let mut reader_b;
    let mut fields_b = match held {
        Some(fields) => fields
            .iter()
            .map(|f| Box::new(*f) as Box<dyn std::io::Read>)
            .collect(),
        None => {
            reader_b = ctx
                .source
                .reader(std::slice::from_ref(b), Validation::None)?;
            let Ok(loaded_b) = reader_b.load(0, &mut buf_b)? else {
                return Ok(false);
            };
            readers(loaded_b, &buf_b)
        }
    };
    let mut fields_a = readers(loaded_a, &buf_a);
    for (x, y) in fields_a.iter_mut().zip(fields_b.iter_mut()) {
        let same = same_bytes(x.as_mut(), y.as_mut())
            .map_err(|e| Error::io("reading input", ctx.source.describe(), e))?;
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A reader per field of a loaded sample.
fn readers(loaded: Loaded, buf: &[u8]) -> Vec<Box<dyn std::io::Read + '_>> {
    match loaded {
        Loaded::Memory(ranges) => ranges
            .into_iter()
            .map(|(start, end)| Box::new(&buf[start..end]) as Box<dyn std::io::Read>)
            .collect(),
        Loaded::Streams(streams) => streams
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn std::io::Read>)
            .collect(),
    }
}

/// Samples read per task of [`duplicate_contents`].
const SCAN_CHUNK: usize = 512;

/// The samples of `samples` (read from `source`) whose fields equal an earlier sample's,
/// by content digest (`stats --dedup`: what `pack --dedup` would leave out, without its
/// byte comparison), read on every core. A sample the source cannot read is not counted.
pub fn duplicate_contents(source: &dyn SampleSource, samples: &[SampleSpec]) -> Result<Duplicates> {
    let digests: Vec<Vec<Option<Digest>>> = samples
        .par_chunks(SCAN_CHUNK)
        .map(|chunk| digest_chunk(source, chunk))
        .collect::<Result<_>>()?;
    let mut first: HashMap<Digest, usize> = HashMap::new();
    let mut duplicates = Duplicates::default();
    for (index, digest) in digests.into_iter().flatten().enumerate() {
        let Some(digest) = digest else { continue };
        let earlier = *first.entry(digest).or_insert(index);
        if earlier != index {
            let sample = &samples[index];
            duplicates.add(
                Duplicate {
                    key: sample.key.clone(),
                    of: samples[earlier].key.clone(),
                },
                sample.payload(),
            );
        }
    }
    Ok(duplicates)
}

/// The digest of each sample of `chunk`, `None` for one the source leaves out.
fn digest_chunk(source: &dyn SampleSource, chunk: &[SampleSpec]) -> Result<Vec<Option<Digest>>> {
    let mut reader = source.reader(chunk, Validation::None)?;
    let mut buf = Vec::new();
    let mut digests = Vec::with_capacity(chunk.len());
    for (index, sample) in chunk.iter().enumerate() {
        buf.clear();
        let digest = match reader.load(index, &mut buf)? {
            Err(_) => None,
            Ok(Loaded::Memory(ranges)) => Some(memory_digest(
                sample
                    .fields
                    .iter()
                    .zip(&ranges)
                    .map(|(f, &(start, end))| (&*f.ext, &buf[start..end])),
            )),
            Ok(Loaded::Streams(mut streams)) => {
                let mut fields = Vec::with_capacity(streams.len());
                for (field, stream) in sample.fields.iter().zip(streams.iter_mut()) {
                    let mut hashing = HashingReader::new(stream);
                    std::io::copy(&mut hashing, &mut std::io::sink()).map_err(|e| {
                        Error::io("reading input", source.field_path(sample, field), e)
                    })?;
                    fields.push((&*field.ext, field.size, hashing.digest()));
                }
                Some(sample_digest(fields))
            }
        };
        digests.push(digest);
    }
    Ok(digests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_sample_of_a_digest_wins_whatever_the_order_of_registration() {
        let seen = Seen::default();
        assert_eq!(seen.register(7, 10), None);
        assert_eq!(
            seen.register(7, 4),
            None,
            "an earlier sample takes the place"
        );
        assert_eq!(seen.register(7, 12), Some(4));
        assert_eq!(seen.register(7, 4), None, "registering again is harmless");
        assert_eq!(seen.first(7), Some(4));
        assert_eq!(seen.first(8), None);
        let digests = PlanDigests {
            kept: vec![(3, u128::MAX - 5)],
            dropped: vec![(4, 1)],
        };
        let json = serde_json::to_string(&digests).unwrap();
        assert_eq!(
            json,
            format!(
                r#"{{"kept":[[3,"{:032x}"]],"dropped":[[4,"{:032x}"]]}}"#,
                u128::MAX - 5,
                1
            )
        );
        assert_eq!(serde_json::from_str::<PlanDigests>(&json).unwrap(), digests);
        assert!(
            serde_json::from_str::<PlanDigests>(r#"{"kept":[[3,"12"]],"dropped":[]}"#).is_err()
        );
    }
}
