//! Sample keys of inputs whose samples come from several files (Parquet files, tar
//! shards, MDS shards): one key may be used by two samples, and readers then merge or
//! confuse them. [`check_unique`] refuses such an input naming both samples, for every
//! source, before anything is written; [`KeyPrefix`] (`pack --key-prefix`) is how a user
//! tells keys of different files apart.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hasher};

use rayon::prelude::*;

use crate::sample::{SampleSource, SampleSpec};
use crate::{Error, Result};

/// A `--key-prefix` word that is not `none`, `stem` or `path`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: use none, stem or path")]
pub struct UnknownKeyPrefix(pub String);

/// What goes before each key of a sample read from a file (a Parquet file, a tar shard,
/// an MDS shard).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyPrefix {
    /// Keys as the input gives them.
    #[default]
    None,
    /// `STEM/KEY`: the file's name without its extension (`train.0` for
    /// `data/train.0.parquet`, `shard-000001` for `shard-000001.tar.gz`).
    Stem,
    /// `PATH/KEY`: the file's path below the input, without its extension
    /// (`data/train.0`).
    Path,
}

impl KeyPrefix {
    /// Parses `none`, `stem` or `path`.
    pub fn parse(text: &str) -> Result<Self, UnknownKeyPrefix> {
        match text {
            "none" => Ok(KeyPrefix::None),
            "stem" => Ok(KeyPrefix::Stem),
            "path" => Ok(KeyPrefix::Path),
            _ => Err(UnknownKeyPrefix(text.to_string())),
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            KeyPrefix::None => "none",
            KeyPrefix::Stem => "stem",
            KeyPrefix::Path => "path",
        }
    }

    /// The prefix (with its `/`) of the keys of samples read from `rel`, a path below the
    /// input.
    pub fn of(self, rel: &str) -> String {
        let path = without_extension(rel);
        match self {
            KeyPrefix::None => String::new(),
            KeyPrefix::Stem => format!("{}/", path.rsplit('/').next().unwrap_or(path)),
            KeyPrefix::Path => format!("{path}/"),
        }
    }

    /// `key` of a sample read from `rel`, prefixed.
    pub fn apply(self, rel: &str, key: &str) -> String {
        match self {
            KeyPrefix::None => key.to_string(),
            _ => format!("{}{key}", self.of(rel)),
        }
    }
}

/// `rel` without the extension of its format: `.parquet`, `.tar` with its compression
/// (`.tar.gz`, `.tgz`, `.tar.zst`), `.mds` with its compression (`.mds.zstd`).
pub fn without_extension(rel: &str) -> &str {
    let base_start = rel.rfind('/').map_or(0, |i| i + 1);
    let mut end = rel.len();
    for _ in 0..2 {
        let Some(dot) = rel[base_start..end].rfind('.') else {
            break;
        };
        let ext = &rel[base_start + dot + 1..end];
        if dot == 0 {
            break;
        }
        let compression = matches!(
            ext,
            "gz" | "tgz" | "zst" | "zstd" | "bz2" | "br" | "snappy" | "xz"
        );
        end = base_start + dot;
        if !compression || ext == "tgz" {
            break;
        }
        // `.tar.gz`, `.mds.zstd`: the format's extension comes next.
        if !matches!(rel[base_start..end].rsplit('.').next(), Some("tar" | "mds")) {
            break;
        }
    }
    &rel[..end]
}

/// A hasher for keys that are hashes already: their low 64 bits.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u128 keys are hashed here (`write_u128`); anything else is folded in.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64;
    }
}

fn hash128(key: &str) -> u128 {
    let a = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
    let mut h = DefaultHasher::new();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    h.write(key.as_bytes());
    (u128::from(a) << 64) | u128::from(h.finish())
}

/// Where a sample comes from, for messages: its first field's input.
fn place(source: &dyn SampleSource, sample: &SampleSpec) -> String {
    match sample.fields.first() {
        Some(field) => source.field_path(sample, field),
        None => sample.key.clone(),
    }
}

/// Refuses `samples` when two of them have one key ([`Error::KeyCollision`], naming
/// both and how to tell them apart). Readers would merge the two (consecutive members
/// of one key are one sample to webdataset) or return one key twice.
pub fn check_unique(
    source: &dyn SampleSource,
    samples: &[SampleSpec],
    prefix: KeyPrefix,
) -> Result<()> {
    // The keys are hashed on every core; the map only compares those hashes, which
    // are already uniform, so it hashes them no further.
    let hashes: Vec<u128> = samples.par_iter().map(|s| hash128(&s.key)).collect();
    let mut seen: HashMap<u128, usize, BuildHasherDefault<PassThrough>> =
        HashMap::with_capacity_and_hasher(samples.len(), BuildHasherDefault::default());
    for (i, (sample, &hash)) in samples.iter().zip(&hashes).enumerate() {
        let Some(first) = seen.insert(hash, i) else {
            continue;
        };
        let earlier = &samples[first];
        if earlier.key != sample.key {
            // Two keys with one 128-bit hash: keep the first, both are packed.
            seen.insert(hash, first);
            continue;
        }
        let containers = (source.container(earlier), source.container(sample));
        let hint = match &containers {
            (Some(a), Some(b)) if a == b => format!(
                "both are in `{a}`, so no --key-prefix tells them apart; make the keys unique in the input{}",
                if a.ends_with(".parquet") {
                    " (or choose a --key-column whose values are unique)"
                } else {
                    ""
                }
            ),
            (Some(a), Some(b))
                if prefix == KeyPrefix::None && KeyPrefix::Stem.of(a) != KeyPrefix::Stem.of(b) =>
            {
                "`--key-prefix stem` puts each file's name before its keys (`--key-prefix path` its path)".into()
            }
            (Some(_), Some(_)) if prefix != KeyPrefix::Path => {
                "`--key-prefix path` puts each file's path below the input before its keys".into()
            }
            _ => "make the keys unique in the input".into(),
        };
        return Err(Error::KeyCollision {
            key: sample.key.clone(),
            first: place(source, earlier),
            second: place(source, sample),
            hint,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_the_name_or_path_without_the_format_extension() {
        for (rel, stem, path) in [
            ("train.0.parquet", "train.0/", "train.0/"),
            (
                "a/b/train-00001-of-00002.parquet",
                "train-00001-of-00002/",
                "a/b/train-00001-of-00002/",
            ),
            (
                "shards/shard-000001.tar.gz",
                "shard-000001/",
                "shards/shard-000001/",
            ),
            ("x.tgz", "x/", "x/"),
            ("x.tar.zst", "x/", "x/"),
            ("0/shard.00000.mds.zstd", "shard.00000/", "0/shard.00000/"),
            ("shard.00000.mds", "shard.00000/", "shard.00000/"),
            ("notes.gz", "notes/", "notes/"),
        ] {
            assert_eq!(KeyPrefix::Stem.of(rel), stem, "{rel}");
            assert_eq!(KeyPrefix::Path.of(rel), path, "{rel}");
        }
        assert_eq!(KeyPrefix::None.apply("a.parquet", "k"), "k");
        assert_eq!(KeyPrefix::Stem.apply("d/a.parquet", "k/1"), "a/k/1");
        assert!(KeyPrefix::parse("dir").is_err());
    }
}
