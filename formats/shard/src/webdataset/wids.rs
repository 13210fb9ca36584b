//! The shard index of wids (`wids.ShardListDataset`): `wids-index.json`, one entry per
//! plain tar shard with its URL (relative to the JSON, so the dataset can move or be
//! served from a bucket), its sample count as webdataset groups members, and its size.
//! `pack --index wids` writes it from what the writer knows ([`super::readers`]); `index
//! --for wids` builds it from existing shards, one read each ([`index_shard_from`]).
//! `widsindex` also records an `md5sum`; wids 0.1.11 does not need it, so none is written.

use std::io::{self, Read};

use serde::Serialize;
use serde_json::Value;
use shardsmith_manifest::{Finding, Inspector};

use super::inspect::TarInspector;
use super::readers::Listing;

/// The file name of the index, beside the shards.
pub const WIDS_INDEX: &str = "wids-index.json";

/// One shard of the index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WidsShard {
    /// Path of the shard relative to the index.
    pub url: String,
    /// Samples in the shard, grouped as webdataset groups tar members.
    pub nsamples: u64,
    /// Size of the shard file in bytes.
    pub filesize: u64,
}

#[derive(Serialize)]
struct WidsIndex<'a> {
    #[serde(rename = "__kind__")]
    kind: &'static str,
    wids_version: u32,
    shardlist: &'a [WidsShard],
}

/// The bytes of `wids-index.json` for `shards`, sorted by URL (as `widsindex` sorts
/// them): the same bytes whatever order the shards come in.
pub fn index_bytes(shards: &mut [WidsShard]) -> Vec<u8> {
    shards.sort_by(|a, b| a.url.cmp(&b.url));
    let index = WidsIndex {
        kind: "wids-shard-index-v1",
        wids_version: 1,
        shardlist: shards,
    };
    let mut bytes = serde_json::to_vec_pretty(&index).expect("plain JSON serialises");
    bytes.push(b'\n');
    bytes
}

/// The facts a tar encoder records per shard when an index is asked for: its sample
/// count and size (wids), and its listing when DALI's or Energon's index is asked for
/// ([`Listing::compact`]).
pub(crate) fn shard_facts(nsamples: u64, filesize: u64, listing: Option<String>) -> Value {
    let mut facts = serde_json::json!({"wids": {"nsamples": nsamples, "filesize": filesize}});
    if let Some(listing) = listing {
        facts["listing"] = listing.into();
    }
    facts
}

/// Why a shard could not be indexed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WidsError {
    /// The shard could not be read.
    #[error("reading shard `{path}`: {source}")]
    Read {
        /// The shard, as given.
        path: String,
        /// The I/O error.
        source: io::Error,
    },
    /// The shard's tar structure is damaged: an index would point into garbage.
    #[error("shard is damaged, not indexed: {0}")]
    Damaged(Box<Finding>),
    /// The shard is compressed: wids maps plain tars only.
    #[error(
        "shard `{0}` is compressed: the readers' indexes (wids, DALI, Energon) point into plain .tar shards only"
    )]
    Compressed(String),
}

/// Reads the plain tar shard `input` (a local file, an object) once, checking its
/// structure as `verify` does, and returns its entry under `url`, with where each sample
/// and member lies (for DALI's and Energon's indexes) when `listed`. A damaged shard
/// (truncated, a bad header, data after the end) is an error naming it and the byte
/// offset.
pub fn index_shard_from(
    input: &mut dyn Read,
    url: &str,
    listed: bool,
) -> Result<(WidsShard, Option<Listing>), WidsError> {
    let inspector = if listed {
        TarInspector::listing(url)
    } else {
        TarInspector::new(url)
    };
    read_shard(input, url, Box::new(inspector))
}

fn read_shard(
    input: &mut dyn Read,
    url: &str,
    mut inspector: Box<TarInspector>,
) -> Result<(WidsShard, Option<Listing>), WidsError> {
    let read_err = |source| WidsError::Read {
        path: url.to_string(),
        source,
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut filesize = 0u64;
    let mut head = [0u8; 4];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_err(e)),
        };
        if filesize == 0 {
            let take = n.min(4);
            head[..take].copy_from_slice(&buf[..take]);
            if head[..2] == [0x1f, 0x8b] || head == [0x28, 0xb5, 0x2f, 0xfd] {
                return Err(WidsError::Compressed(url.to_string()));
            }
        }
        inspector.update(&buf[..n]);
        filesize += n as u64;
    }
    let (inspection, listing) = inspector.finish_listed();
    if let Some(finding) = inspection.findings.into_iter().find(Finding::is_error) {
        return Err(WidsError::Damaged(Box::new(finding)));
    }
    let shard = WidsShard {
        url: url.to_string(),
        nsamples: inspection.samples.unwrap_or(0),
        filesize,
    };
    Ok((shard, listing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in members {
            out.extend_from_slice(&super::super::ustar::testing::file(name, data));
        }
        out.extend_from_slice(&[0; 1024]);
        out
    }

    #[test]
    fn index_is_sorted_and_deterministic() {
        let mut a = vec![
            WidsShard {
                url: "b.tar".into(),
                nsamples: 2,
                filesize: 3072,
            },
            WidsShard {
                url: "a.tar".into(),
                nsamples: 1,
                filesize: 2048,
            },
        ];
        let mut b = a.clone();
        b.reverse();
        let bytes = index_bytes(&mut a);
        assert_eq!(bytes, index_bytes(&mut b));
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value["__kind__"], "wids-shard-index-v1");
        assert_eq!(value["wids_version"], 1);
        assert_eq!(value["shardlist"][0]["url"], "a.tar");
        assert_eq!(value["shardlist"][1]["nsamples"], 2);
    }

    #[test]
    fn shards_are_counted_and_damage_is_named() {
        let dir = std::env::temp_dir().join(format!("wids-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes = tar(&[("a.jpg", b"x"), ("a.txt", b"y"), ("b.txt", b"z")]);
        let path = dir.join("s.tar");
        std::fs::write(&path, &bytes).unwrap();
        let read =
            |listed| index_shard_from(&mut std::fs::File::open(&path).unwrap(), "s.tar", listed);
        let (entry, _) = read(false).unwrap();
        assert_eq!((entry.nsamples, entry.filesize), (2, bytes.len() as u64));
        std::fs::write(&path, &bytes[..700]).unwrap();
        let err = read(true).unwrap_err().to_string();
        assert!(err.contains("s.tar") && err.contains("byte"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
