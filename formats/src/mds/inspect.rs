//! Verifying MDS datasets: each shard walked on its own (decompressed, header, offsets,
//! embedded config, every record's sizes, the hashes its config names), then every
//! `index.json` compared with the shards it lists (`check_indices`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector, Manifest};

use super::codec::{self, Compression, Family};
use super::{MAX_SHARD, pyjson};

/// Buffers one shard (at most 4 GiB, the format's limit) and checks it at the end.
pub struct MdsInspector {
    path: String,
    family: Option<Family>,
    data: Vec<u8>,
    too_big: bool,
}

impl MdsInspector {
    /// A checker for the shard at `path`; the extension after `.mds` names its compression.
    pub fn new(path: &str) -> Self {
        let family = path
            .rsplit_once(".mds.")
            .and_then(|(_, ext)| Family::from_ext(ext));
        Self {
            path: path.to_string(),
            family,
            data: Vec::new(),
            too_big: false,
        }
    }
}

impl Inspector for MdsInspector {
    fn update(&mut self, data: &[u8]) {
        if self.data.len() as u64 + data.len() as u64 > MAX_SHARD {
            self.too_big = true;
            self.data = Vec::new();
        }
        if !self.too_big {
            self.data.extend_from_slice(data);
        }
    }

    fn finish(self: Box<Self>) -> Inspection {
        let mut inspection = Inspection {
            format: "mds".into(),
            ..Inspection::default()
        };
        let path = self.path.as_str();
        let err = |kind, at: u64, message: String| Finding::error(kind, path, message).at(at);
        if self.too_big {
            inspection.findings.push(err(
                FindingKind::BadHeader,
                0,
                "file is larger than 4 GiB, which no MDS shard can be".into(),
            ));
            return inspection;
        }
        let decompressed;
        let (raw, note) = match self.family {
            None => (self.data.as_slice(), ""),
            Some(family) => match Compression::decompress(family, &self.data, MAX_SHARD) {
                Ok(out) => {
                    decompressed = out;
                    (decompressed.as_slice(), " of the decompressed shard")
                }
                Err(e) => {
                    inspection.findings.push(err(
                        FindingKind::DecompressionFailed,
                        0,
                        format!("does not decompress as {}: {e}", family.name()),
                    ));
                    inspection
                        .facts
                        .insert("zip_bytes".into(), Value::from(self.data.len()));
                    return inspection;
                }
            },
        };
        let mut findings = Vec::new();
        let parsed = parse_shard(raw, note, &mut |kind, at, message| {
            findings.push(err(kind, at, message))
        });
        inspection.findings = findings;
        inspection
            .facts
            .insert("raw_bytes".into(), Value::from(raw.len()));
        if let Some((samples, config)) = parsed {
            inspection.samples = Some(samples);
            let algorithms: Vec<String> = config["hashes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let digest = |data: &[u8]| -> Value {
                let map: serde_json::Map<String, Value> = algorithms
                    .iter()
                    .filter_map(|a| codec::hash_hex(a, data).map(|h| (a.clone(), Value::from(h))))
                    .collect();
                Value::Object(map)
            };
            inspection.facts.insert("raw_hashes".into(), digest(raw));
            if self.family.is_some() {
                inspection
                    .facts
                    .insert("zip_bytes".into(), Value::from(self.data.len()));
                inspection
                    .facts
                    .insert("zip_hashes".into(), digest(&self.data));
            }
            inspection.facts.insert("config".into(), config);
        }
        inspection
    }
}

/// Walks a raw shard; returns its sample count and embedded config when the header is
/// readable.
fn parse_shard(
    raw: &[u8],
    note: &str,
    report: &mut dyn FnMut(FindingKind, u64, String),
) -> Option<(u64, Value)> {
    let len = raw.len() as u64;
    let u32_at = |at: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        raw.get(at..at + 4)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    };
    let Some(n) = u32_at(0) else {
        report(
            FindingKind::Truncated,
            len,
            format!("shard{note} is {len} bytes, shorter than its header"),
        );
        return None;
    };
    let table_end = 4 + 4 * (n + 1);
    if table_end > len {
        report(
            FindingKind::Truncated,
            len,
            format!(
                "header{note} declares {n} samples, whose offset table ends at byte {table_end}, past the end ({len} bytes)"
            ),
        );
        return None;
    }
    let offsets: Vec<u64> = (0..=n).map(|i| u32_at(4 + 4 * i).unwrap_or(0)).collect();
    let first = offsets[0];
    if first < table_end || first > len {
        report(
            FindingKind::BadHeader,
            4,
            format!("first sample offset{note} {first} is outside the shard ({table_end}..{len})"),
        );
        return None;
    }
    let config: Value = match serde_json::from_slice(&raw[table_end as usize..first as usize]) {
        Ok(config) => config,
        Err(e) => {
            report(
                FindingKind::BadHeader,
                table_end,
                format!("embedded config{note} is not JSON: {e}"),
            );
            return None;
        }
    };
    if let Some(i) = (0..n as usize).find(|&i| offsets[i + 1] < offsets[i]) {
        report(
            FindingKind::BadHeader,
            4 + 4 * (i as u64 + 1),
            format!("sample offsets{note} go backwards at sample {}", i + 1),
        );
        return Some((n, config));
    }
    let last = offsets[n as usize];
    if last > len {
        report(
            FindingKind::Truncated,
            len,
            format!("shard{note} ends at byte {len} but its last sample ends at {last}"),
        );
    } else if last < len {
        report(
            FindingKind::TrailingData,
            last,
            format!("{} bytes{note} after the last sample", len - last),
        );
    }
    let sizes: Vec<Option<u64>> = config["column_sizes"]
        .as_array()
        .map(|a| a.iter().map(Value::as_u64).collect())
        .unwrap_or_default();
    let variable = sizes.iter().filter(|s| s.is_none_or(|s| s == 0)).count() as u64;
    let fixed: u64 = sizes.iter().filter_map(|s| s.filter(|&s| s > 0)).sum();
    for i in 0..n as usize {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if end > len {
            break; // cut by the truncation reported above
        }
        let record = &raw[start as usize..end as usize];
        let head = 4 * variable;
        if (record.len() as u64) < head {
            report(
                FindingKind::BadRecord,
                start,
                format!(
                    "sample {i}{note} is {} bytes, shorter than its size table",
                    record.len()
                ),
            );
            break;
        }
        let body: u64 = (0..variable as usize)
            .map(|k| {
                u64::from(u32::from_le_bytes(
                    record[4 * k..4 * k + 4].try_into().expect("4 bytes"),
                ))
            })
            .sum();
        if head + body + fixed != record.len() as u64 {
            report(
                FindingKind::BadRecord,
                start,
                format!(
                    "sample {i}{note}: its column sizes add up to {} bytes but the record is {}",
                    head + body + fixed,
                    record.len()
                ),
            );
            break;
        }
    }
    Some((n, config))
}

const ENTRY_KEYS: [&str; 11] = [
    "column_encodings",
    "column_names",
    "column_sizes",
    "compression",
    "format",
    "hashes",
    "raw_data",
    "samples",
    "size_limit",
    "version",
    "zip_data",
];
const CONFIG_KEYS: [&str; 8] = [
    "column_encodings",
    "column_names",
    "column_sizes",
    "compression",
    "format",
    "hashes",
    "size_limit",
    "version",
];

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn is_shard_name(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut parts = base.split('.');
    parts.next() == Some("shard")
        && parts
            .next()
            .is_some_and(|n| n.len() >= 5 && n.bytes().all(|b| b.is_ascii_digit()))
        && parts.next() == Some("mds")
        && parts
            .next()
            .is_none_or(|ext| Family::from_ext(ext).is_some())
        && parts.next().is_none()
}

/// Compares every MDS `index.json` under the root with the shards it lists, and reports
/// MDS shards no index lists.
pub fn check_indices(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    manifest: Option<&Manifest>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut referenced = BTreeSet::new();
    let mut saw_index = false;
    for index_path in files
        .keys()
        .filter(|p| *p == "index.json" || p.ends_with("/index.json"))
    {
        let Ok(bytes) = std::fs::read(root.join(index_path)) else {
            continue;
        };
        let index: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                findings.push(Finding::error(
                    FindingKind::IndexInvalid,
                    index_path,
                    format!("is not JSON: {e}"),
                ));
                continue;
            }
        };
        let Some(shards) = index.get("shards").and_then(Value::as_array) else {
            continue;
        };
        saw_index = true;
        if index["version"] != 2 {
            findings.push(Finding::error(
                FindingKind::IndexInvalid,
                index_path,
                "top-level version is not 2: streaming refuses it",
            ));
        }
        let dir = index_path.rsplit_once('/').map_or("", |(d, _)| d);
        for (i, entry) in shards.iter().enumerate() {
            check_entry(
                index_path,
                dir,
                i,
                entry,
                files,
                inspections,
                &mut referenced,
                &mut findings,
            );
        }
    }
    let listed_in_manifest =
        |path: &str| manifest.is_none_or(|m| m.files.iter().any(|f| f.path == path));
    for path in files
        .keys()
        .filter(|p| is_shard_name(p) && !referenced.contains(*p))
    {
        if listed_in_manifest(path) {
            let message = if saw_index {
                "MDS shard no index.json lists: readers never see it (stale or foreign)"
            } else {
                "MDS shard without an index.json: readers cannot use it"
            };
            findings.push(Finding::error(FindingKind::UnlistedFile, path, message));
        }
    }
    findings.sort_by(|a, b| {
        (&a.path, a.offset, a.kind, &a.message).cmp(&(&b.path, b.offset, b.kind, &b.message))
    });
    findings.dedup();
    findings
}

#[allow(clippy::too_many_arguments)]
fn check_entry(
    index_path: &str,
    dir: &str,
    i: usize,
    entry: &Value,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    referenced: &mut BTreeSet<String>,
    findings: &mut Vec<Finding>,
) {
    let invalid = |message: String| Finding::error(FindingKind::IndexInvalid, index_path, message);
    let Some(object) = entry.as_object() else {
        findings.push(invalid(format!("shard {i} is not an object")));
        return;
    };
    let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
    let missing: Vec<&str> = ENTRY_KEYS
        .iter()
        .copied()
        .filter(|k| !keys.contains(k))
        .collect();
    let extra: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !ENTRY_KEYS.contains(k))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        findings.push(invalid(format!(
            "shard {i} has missing keys {missing:?} / unexpected keys {extra:?}: streaming's reader raises TypeError"
        )));
    }
    if entry["version"] != 2 || entry["format"] != "mds" {
        findings.push(invalid(format!("shard {i} is not format `mds` version 2")));
    }
    let config = json!(
        CONFIG_KEYS
            .iter()
            .map(|k| ((*k).to_string(), entry[*k].clone()))
            .collect::<serde_json::Map<_, _>>()
    );
    let raw = &entry["raw_data"];
    let zip = &entry["zip_data"];
    let Some(raw_name) = raw["basename"].as_str() else {
        findings.push(invalid(format!("shard {i} has no raw_data.basename")));
        return;
    };
    let raw_path = join(dir, raw_name);
    let zip_path = zip["basename"].as_str().map(|z| join(dir, z));
    referenced.insert(raw_path.clone());
    if let Some(z) = &zip_path {
        referenced.insert(z.clone());
    }
    let mismatch = |path: &str, what: &str, expected: &Value, actual: &Value| {
        Finding::error(
            FindingKind::IndexMismatch,
            path,
            format!("{what} differs from {index_path} (shard {i})"),
        )
        .values(expected.to_string(), actual.to_string())
    };
    let present_raw = files.contains_key(&raw_path);
    let present_zip = zip_path.as_ref().is_some_and(|z| files.contains_key(z));
    if !present_raw && !present_zip {
        let shown = zip_path.clone().unwrap_or(raw_path.clone());
        findings.push(Finding::error(
            FindingKind::MissingFile,
            &shown,
            format!("listed in {index_path} (shard {i}) but not present"),
        ));
        return;
    }
    for (path, info, zipped) in [
        (Some(raw_path.clone()), raw, false),
        (zip_path.clone(), zip, true),
    ] {
        let Some(path) = path.filter(|p| files.contains_key(p)) else {
            continue;
        };
        let size = files[&path];
        if info["bytes"].as_u64() != Some(size) {
            findings.push(mismatch(
                &path,
                "file size",
                &info["bytes"],
                &Value::from(size),
            ));
        }
        let Some(inspection) = inspections.get(&path) else {
            continue;
        };
        let facts = &inspection.facts;
        if let Some(samples) = inspection.samples
            && entry["samples"].as_u64() != Some(samples)
        {
            findings.push(mismatch(
                &path,
                "sample count",
                &entry["samples"],
                &Value::from(samples),
            ));
        }
        if let Some(embedded) = facts.get("config")
            && pyjson::dumps(embedded) != pyjson::dumps(&config)
        {
            findings.push(mismatch(&path, "embedded config", &config, embedded));
        }
        let checks: Vec<(&str, &Value, Option<&Value>)> = if zipped {
            vec![
                ("decompressed size", &raw["bytes"], facts.get("raw_bytes")),
                ("zip_data hashes", &info["hashes"], facts.get("zip_hashes")),
                (
                    "raw_data hashes (after decompression)",
                    &raw["hashes"],
                    facts.get("raw_hashes"),
                ),
            ]
        } else {
            vec![("raw_data hashes", &info["hashes"], facts.get("raw_hashes"))]
        };
        for (what, expected, actual) in checks {
            let Some(actual) = actual else { continue };
            let differs = match (expected.as_object(), actual.as_object()) {
                (Some(want), Some(got)) => want
                    .iter()
                    .any(|(algo, hex)| got.get(algo).is_some_and(|g| g != hex)),
                _ => expected != actual,
            };
            if differs {
                findings.push(mismatch(&path, what, expected, actual));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspect(name: &str, bytes: &[u8]) -> Inspection {
        let mut inspector = Box::new(MdsInspector::new(name));
        inspector.update(bytes);
        inspector.finish()
    }

    /// Found by fuzzing (`mds_shard`): a 5-byte snappy block whose length header says
    /// 2.5 GB; the whole output was allocated from that header before decoding.
    #[test]
    fn a_snappy_length_the_block_cannot_hold_is_refused_before_allocating() {
        let inspection = inspect("shard.00000.mds.snappy", b"\xff\xb3\xff\xff\x09");
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::DecompressionFailed
                    && f.message.contains("compressed bytes can hold")),
            "{:?}",
            inspection.findings
        );
    }
}
