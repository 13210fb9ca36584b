//! Which indexes are asked for ([`IndexKinds`]) and the files DALI's and Energon's
//! indexes are, made from the shards' listings ([`listing_files`]).

use super::energon::{self, NV_META};
use super::listing::Listing;
use std::path::Path;

use super::sqlite::{IndexBuilder, SqliteError};
use crate::format::DatasetFile;

/// The readers whose indexes are written beside the shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IndexKinds {
    /// wids' `wids-index.json`.
    pub wids: bool,
    /// DALI's `dali/NAME.idx` per shard.
    pub dali: bool,
    /// Energon's `.nv-meta/` and `NAME.tar.idx` per shard.
    pub energon: bool,
}

/// An index name `--index` / `--for` does not know.
#[derive(Debug, thiserror::Error)]
#[error("unknown index `{0}`: expected wids, dali, energon or all (comma-separated)")]
pub struct UnknownIndex(pub String);

impl IndexKinds {
    /// Every index.
    pub const ALL: IndexKinds = IndexKinds {
        wids: true,
        dali: true,
        energon: true,
    };

    /// Parses a comma-separated list of `wids`, `dali`, `energon` and `all`.
    pub fn parse(text: &str) -> Result<Self, UnknownIndex> {
        let mut kinds = IndexKinds::default();
        for name in text.split(',').map(str::trim) {
            match name {
                "wids" => kinds.wids = true,
                "dali" => kinds.dali = true,
                "energon" => kinds.energon = true,
                "all" => kinds = Self::ALL,
                other => return Err(UnknownIndex(other.to_string())),
            }
        }
        Ok(kinds)
    }

    /// The names of the indexes asked for, in a fixed order (as manifests record them).
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.wids, "wids"),
            (self.dali, "dali"),
            (self.energon, "energon"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// The kinds a recorded list of names (`["wids", "dali"]`) asks for.
    pub fn from_names(names: &serde_json::Value) -> Self {
        let has = |name: &str| {
            names
                .as_array()
                .is_some_and(|list| list.iter().any(|n| n == name))
        };
        IndexKinds {
            wids: has("wids"),
            dali: has("dali"),
            energon: has("energon"),
        }
    }

    /// True when any index is asked for.
    pub fn any(&self) -> bool {
        self.wids || self.dali || self.energon
    }

    /// True when an index needs every member's place (DALI, Energon).
    pub fn needs_listing(&self) -> bool {
        self.dali || self.energon
    }
}

/// DALI's index of shard `name` (`sub/shard-000000.tar` → `dali/sub/shard-000000.idx`).
pub fn dali_name(name: &str) -> String {
    let stem = name.strip_suffix(".tar").unwrap_or(name);
    format!("dali/{stem}.idx")
}

/// Energon's index of shard `name`, beside it (`shard-000000.tar.idx`).
pub fn tar_idx_name(name: &str) -> String {
    format!("{name}.idx")
}

/// Makes DALI's and Energon's files shard by shard, shards given in Energon's order
/// ([`sort_key`]): each shard's own files as it comes, `.nv-meta/` at the end. Only
/// `index.sqlite` grows with the dataset, and it grows on disk.
pub struct ListingWriter {
    kinds: IndexKinds,
    builder: Option<IndexBuilder>,
    counts: Vec<(String, u64)>,
}

impl ListingWriter {
    /// A writer of the indexes `kinds` asks for; Energon's `index.sqlite` is built in a
    /// temporary file in `scratch`.
    pub fn new(kinds: IndexKinds, scratch: &Path) -> Result<Self, SqliteError> {
        let builder = if kinds.energon {
            Some(IndexBuilder::new(scratch)?)
        } else {
            None
        };
        Ok(Self {
            kinds,
            builder,
            counts: Vec::new(),
        })
    }

    /// The files of shard `name` (the next in Energon's order): its DALI index and its
    /// `.tar.idx`, as asked for.
    pub fn add(&mut self, name: &str, listing: &Listing) -> Result<Vec<DatasetFile>, SqliteError> {
        let mut files = Vec::new();
        if self.kinds.dali {
            for sample in &listing.samples {
                for part in &sample.parts {
                    let member = format!("{}.{}", sample.key, part.ext);
                    if member.chars().any(char::is_whitespace) {
                        return Err(SqliteError::DaliName {
                            shard: name.to_string(),
                            name: member,
                        });
                    }
                }
            }
            files.push(DatasetFile::new(dali_name(name), listing.dali_bytes()));
        }
        if let Some(builder) = &mut self.builder {
            builder.add(name, listing)?;
            files.push(DatasetFile::new(
                tar_idx_name(name),
                listing.tar_idx_bytes(),
            ));
            self.counts
                .push((name.to_string(), listing.samples.len() as u64));
        }
        Ok(files)
    }

    /// The dataset's own files: Energon's `.nv-meta/`, when asked for.
    pub fn finish(self) -> Result<Vec<DatasetFile>, SqliteError> {
        let Some(builder) = self.builder else {
            return Ok(Vec::new());
        };
        let sqlite = builder.finish()?;
        let uuid = energon::index_uuid_of_file(sqlite.path()).map_err(|e| SqliteError::Temp {
            dir: sqlite.path().to_path_buf(),
            source: e,
        })?;
        let counts: Vec<(&str, u64)> = self.counts.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let names: Vec<&str> = counts.iter().map(|(n, _)| *n).collect();
        let meta = |file: &str| format!("{NV_META}/{file}");
        Ok(vec![
            DatasetFile::new(meta(".info.json"), energon::info_json(&counts)),
            DatasetFile::new(meta("split.yaml"), energon::split_yaml(&names)),
            DatasetFile::new(meta("dataset.yaml"), energon::dataset_yaml()),
            DatasetFile::new(meta("index.uuid"), uuid),
            DatasetFile {
                name: meta("index.sqlite"),
                bytes: Vec::new(),
                file: Some(sqlite),
            },
        ])
    }
}

/// The order Energon gives shard paths (its `**/*.tar` walk, sorted as paths): part by
/// part, so `a/x.tar` comes before `a-b/x.tar`, which comes before `a.tar`.
pub fn sort_key(name: &str) -> std::str::Split<'_, char> {
    name.split('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_name_themselves() {
        let kinds = IndexKinds::parse("energon, wids").unwrap();
        assert_eq!(kinds.names(), ["wids", "energon"]);
        assert_eq!(IndexKinds::parse("all").unwrap(), IndexKinds::ALL);
        assert!(IndexKinds::parse("wids,lance").is_err());
        let back = IndexKinds::from_names(&serde_json::json!(kinds.names()));
        assert_eq!(back, kinds);
        assert_eq!(dali_name("a/s-000001.tar"), "dali/a/s-000001.idx");
    }
}
