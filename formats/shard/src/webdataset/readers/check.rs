//! `verify`'s check of DALI's and Energon's indexes against their shards. The shard's
//! inspector lists it during the same read that hashes it (when an index of it is
//! there, [`wants_listing`]) and records digests of the index bytes the listing gives
//! ([`listing_facts`]); each index found is compared with them. A stale index (the shard
//! was rewritten after it) makes its reader read the wrong bytes: an error.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};
use shardsmith_manifest::{Finding, FindingKind, Inspection};

use super::energon::NV_META;
use super::files::{dali_name, tar_idx_name};
use super::listing::Listing;
use super::sqlite::read_listings;

const SAMPLES: &str = "readers.samples";
const END: &str = "readers.end";
const DALI: &str = "readers.dali_sha256";
const TAR_IDX: &str = "readers.tar_idx_sha256";

/// True when the shard at `path` under `root` has a DALI or Energon index to check.
pub(crate) fn wants_listing(root: &Path, path: &str) -> bool {
    !path.contains("://")
        && (root.join(dali_name(path)).is_file()
            || root.join(tar_idx_name(path)).is_file()
            || root.join(NV_META).join("index.sqlite").is_file())
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the inspector records of a shard's listing: digests of the DALI and Energon
/// index bytes it gives, the sample count and the end of the data.
pub(crate) fn listing_facts(listing: &Listing) -> Vec<(String, Value)> {
    vec![
        (SAMPLES.into(), listing.samples.len().into()),
        (END.into(), listing.end.into()),
        (DALI.into(), sha256_hex(&listing.dali_bytes()).into()),
        (TAR_IDX.into(), sha256_hex(&listing.tar_idx_bytes()).into()),
    ]
}

/// Findings of every DALI index, Energon `.tar.idx` and `index.sqlite` under `root`
/// against the shards they index.
pub(crate) fn check_reader_indexes(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for path in files.keys() {
        let (shard, fact, reader) = if let Some(stem) = path
            .strip_prefix("dali/")
            .and_then(|p| p.strip_suffix(".idx"))
        {
            (format!("{stem}.tar"), DALI, "DALI")
        } else if let Some(shard) = path.strip_suffix(".tar.idx") {
            (format!("{shard}.tar"), TAR_IDX, "Energon")
        } else {
            continue;
        };
        let Some(inspection) = inspections.get(&shard) else {
            if !files.contains_key(&shard) {
                findings.push(Finding::error(
                    FindingKind::MissingFile,
                    &shard,
                    format!("indexed by {path} but not present"),
                ));
            }
            continue;
        };
        let Some(expected) = inspection.facts.get(fact).and_then(Value::as_str) else {
            continue;
        };
        let Ok(bytes) = std::fs::read(root.join(path)) else {
            continue;
        };
        if sha256_hex(&bytes) != expected {
            let listed = if reader == "DALI" {
                dali_count(&bytes)
            } else {
                (bytes.len() / 8).checked_sub(1).map(|n| n as u64)
            };
            findings.push(stale(path, &shard, reader, listed, inspection));
        }
    }
    findings.extend(check_sqlite(root, files, inspections));
    findings
}

/// The index is stale: what it lists against what the shard holds.
fn stale(
    index: &str,
    shard: &str,
    reader: &str,
    listed: Option<u64>,
    inspection: &Inspection,
) -> Finding {
    let samples = inspection.facts.get(SAMPLES).and_then(Value::as_u64);
    let end = inspection.facts.get(END).and_then(Value::as_u64);
    let listed = listed.map_or_else(
        || "an unreadable list".to_string(),
        |n| format!("{n} samples"),
    );
    Finding::error(
        FindingKind::IndexMismatch,
        shard,
        format!(
            "{index} does not match the shard ({listed} in the index; the shard has {} samples, its data ending at byte {}): the index is stale and {reader} would read the wrong bytes; run `shardsmith index` again",
            samples.unwrap_or(0),
            end.unwrap_or(0)
        ),
    )
}

/// The sample count on the first line of a DALI index (`v1.2 N`).
fn dali_count(bytes: &[u8]) -> Option<u64> {
    let line = bytes.split(|&b| b == b'\n').next()?;
    std::str::from_utf8(line)
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

/// `.nv-meta/index.sqlite` against the shards `.nv-meta/.info.json` names (in
/// `tar_file_id` order).
fn check_sqlite(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let sqlite = format!("{NV_META}/index.sqlite");
    let info_path = format!("{NV_META}/.info.json");
    if !files.contains_key(&sqlite) {
        return Vec::new();
    }
    let invalid =
        |path: &str, message: String| Finding::error(FindingKind::IndexInvalid, path, message);
    let info: Value = match std::fs::read(root.join(&info_path)).map(|b| serde_json::from_slice(&b))
    {
        Ok(Ok(info)) => info,
        _ => {
            return vec![invalid(
                &info_path,
                "is missing or not JSON: Energon cannot open the dataset".into(),
            )];
        }
    };
    let Some(counts) = info["shard_counts"].as_object() else {
        return vec![invalid(&info_path, "has no shard_counts".into())];
    };
    let listings = match read_listings(&root.join(&sqlite)) {
        Ok(listings) => listings,
        Err(e) => return vec![invalid(&sqlite, format!("cannot be read: {e}"))],
    };
    let mut findings = Vec::new();
    let mut by_id = listings;
    for (id, (shard, count)) in counts.iter().enumerate() {
        let Some(inspection) = inspections.get(shard) else {
            if !files.contains_key(shard) {
                findings.push(Finding::error(
                    FindingKind::MissingFile,
                    shard,
                    format!("listed by {info_path} but not present"),
                ));
            }
            continue;
        };
        let listing = by_id.remove(&(id as i64)).unwrap_or_default();
        let samples = inspection.facts.get(SAMPLES).and_then(Value::as_u64);
        if count.as_u64() != samples {
            findings.push(
                Finding::error(
                    FindingKind::IndexMismatch,
                    shard,
                    format!("sample count differs from {info_path}: the index is stale and Energon would read the wrong bytes; run `shardsmith index` again"),
                )
                .values(count, samples.unwrap_or(0)),
            );
        }
        let same = |fact: &str, bytes: Vec<u8>| {
            inspection.facts.get(fact).and_then(Value::as_str) == Some(&sha256_hex(&bytes))
        };
        if inspection.facts.contains_key(DALI)
            && !(same(DALI, listing.dali_bytes()) && same(TAR_IDX, listing.tar_idx_bytes()))
        {
            let listed = Some(listing.samples.len() as u64);
            findings.push(stale(&sqlite, shard, "Energon", listed, inspection));
        }
    }
    for (id, listing) in by_id {
        findings.push(invalid(
            &sqlite,
            format!(
                "lists {} samples of tar_file_id {id}, which {info_path} does not name",
                listing.samples.len()
            ),
        ));
    }
    findings
}
