//! Which indexes are asked for ([`IndexKinds`]) and the files DALI's and Energon's
//! indexes are, made from the shards' listings ([`listing_files`]).

use super::energon::{self, NV_META};
use super::listing::Listing;
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

/// DALI's and Energon's files (as `kinds` asks) for `shards`, each a name relative to
/// the dataset root and its listing. Energon numbers shards in the order of their sorted
/// paths (its `**/*.tar` walk), so they are sorted first.
pub fn listing_files(
    kinds: IndexKinds,
    shards: &mut [(String, Listing)],
) -> Result<Vec<DatasetFile>, SqliteError> {
    let mut files = Vec::new();
    if kinds.dali {
        for (name, listing) in shards.iter() {
            files.push(DatasetFile {
                name: dali_name(name),
                bytes: listing.dali_bytes(),
            });
        }
    }
    if !kinds.energon {
        return Ok(files);
    }
    energon::sort_paths(shards);
    let mut builder = IndexBuilder::new()?;
    for (name, listing) in shards.iter() {
        builder.add(name, listing)?;
        files.push(DatasetFile {
            name: tar_idx_name(name),
            bytes: listing.tar_idx_bytes(),
        });
    }
    let sqlite = builder.finish()?;
    let names: Vec<&str> = shards.iter().map(|(n, _)| n.as_str()).collect();
    let counts: Vec<(&str, u64)> = shards
        .iter()
        .map(|(n, l)| (n.as_str(), l.samples.len() as u64))
        .collect();
    let meta = |file: &str| format!("{NV_META}/{file}");
    files.push(DatasetFile {
        name: meta(".info.json"),
        bytes: energon::info_json(&counts),
    });
    files.push(DatasetFile {
        name: meta("split.yaml"),
        bytes: energon::split_yaml(&names),
    });
    files.push(DatasetFile {
        name: meta("dataset.yaml"),
        bytes: energon::dataset_yaml(),
    });
    files.push(DatasetFile {
        name: meta("index.uuid"),
        bytes: energon::index_uuid(&sqlite),
    });
    files.push(DatasetFile {
        name: meta("index.sqlite"),
        bytes: sqlite,
    });
    Ok(files)
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
