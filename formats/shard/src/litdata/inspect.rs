//! Verifying LitData datasets: each chunk walked on its own (inflated first when its
//! `index.json` says zstd wrapped it, or it starts with a zstd or `LDFZ01` magic; then
//! item count, offsets, every item's leaf sizes against the leaves its `index.json`
//! names and its `json` leaves decoded, or, for a chunk whose items are only in its Arrow footer, the footer read and
//! its rows counted), then every LitData `index.json` compared with the chunks it lists
//! ([`check_indices`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{FileContext, Finding, FindingKind, Inspection, Inspector, Manifest};

use super::chunk::{self, ChunkError};
use super::compressed::{Compression, FRAMED_MAGIC, Wrap, inflate_file, unframe, unsample};
use super::footer::{self, FooterRows};
use super::format::MAX_CHUNK;
use super::index::{INDEX, is_litdata_index};
use super::input::nested;
use super::spec::{self, KEY};
use crate::mds::input::problem::Problem;

/// True when `path` is named as `optimize` names chunks: `chunk-R-N.bin` (compressed
/// whole: `chunk-R-N.zstd.bin`, `chunk-R-N.zstd:9.bin` for `compression="zstd:9"`).
pub fn is_chunk_name(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    let Some(rest) = base.strip_prefix("chunk-") else {
        return false;
    };
    let Some(stem) = rest
        .strip_suffix(".bin")
        .map(|s| match s.rsplit_once(".zstd") {
            Some((stem, level))
                if level.is_empty()
                    || level.strip_prefix(':').is_some_and(|l| {
                        !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())
                    }) =>
            {
                stem
            }
            _ => s,
        })
    else {
        return false;
    };
    let mut parts = stem.split('-');
    let number =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    number(parts.next()) && number(parts.next()) && parts.next().is_none()
}

/// What a chunk's `index.json` says about its items: leaf count, whether leaf 0 is
/// the key, and which leaves LitData's `json` serializer stores.
#[derive(Clone, Debug)]
struct Leaves {
    count: usize,
    keyed: bool,
    /// (leaf, its name) of every `json` leaf.
    json: Vec<(usize, String)>,
}

fn leaves_of(index: &Value) -> Option<Leaves> {
    let names = spec::leaf_names(index["config"]["data_spec"].as_str()?).ok()?;
    let formats = index["config"]["data_format"].as_array()?;
    (formats.len() == names.len()).then(|| Leaves {
        count: names.len(),
        keyed: names.first().is_some_and(|n| n == KEY) && formats[0] == "str",
        json: (names.iter().enumerate())
            .filter(|(l, _)| formats[*l] == "json")
            .map(|(l, name)| (l, name.clone()))
            .collect(),
    })
}

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The fact naming the size a `chunk`-wrapped chunk inflates to (its `chunk_bytes`).
const INFLATED: &str = "litdata.inflated_bytes";

/// Buffers one chunk (at most 4 GiB, the format's limit) and checks it at the end.
pub struct LitdataInspector {
    path: String,
    leaves: Option<Leaves>,
    /// The chunk's zstd wrap, from its `index.json` (`None`: no LitData index beside
    /// it, told by the chunk's first bytes).
    wrap: Option<Wrap>,
    data: Vec<u8>,
    too_big: bool,
}

impl LitdataInspector {
    /// A checker for the chunk `ctx` names; the `index.json` beside it, when it is
    /// LitData's, says how many leaves each item has.
    pub fn new(ctx: &FileContext<'_>) -> Self {
        let dir = ctx.path.rsplit_once('/').map_or("", |(d, _)| d);
        let index = ctx.root.join(dir).join(INDEX);
        let index = std::fs::read(index)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(is_litdata_index);
        let leaves = index.as_ref().and_then(leaves_of);
        let wrap = index.map(|i| {
            Compression::of_config(&i["config"])
                .unwrap_or_else(|_| Compression::none())
                .wrap_of(ctx.path)
        });
        Self {
            path: ctx.path.to_string(),
            leaves,
            wrap,
            data: Vec::new(),
            too_big: false,
        }
    }
}

impl Inspector for LitdataInspector {
    fn update(&mut self, data: &[u8]) {
        if self.data.len() as u64 + data.len() as u64 > MAX_CHUNK {
            self.too_big = true;
            self.data = Vec::new();
        }
        if !self.too_big {
            self.data.extend_from_slice(data);
        }
    }

    fn finish(self: Box<Self>) -> Inspection {
        let mut inspection = Inspection {
            format: "litdata".into(),
            ..Inspection::default()
        };
        let path = self.path.as_str();
        if self.too_big {
            inspection.findings.push(Finding::error(
                FindingKind::BadHeader,
                path,
                "file is larger than 4 GiB, which no LitData chunk can be",
            ));
            return inspection;
        }
        let wrap = self.wrap.unwrap_or(if self.data.starts_with(&ZSTD_MAGIC) {
            Wrap::Chunk
        } else if self.data.starts_with(FRAMED_MAGIC) {
            Wrap::Batch
        } else {
            Wrap::None
        });
        let inflated = match wrap {
            Wrap::None => Ok(None),
            Wrap::Chunk => inflate_file(&self.data[..]).map(Some),
            Wrap::Batch => unframe(&self.data).map(Some),
            Wrap::Sample => unsample(&self.data).map(Some),
        };
        let inflated = match inflated {
            Ok(inflated) => inflated,
            Err(e) => {
                let kind = if e.is_truncated() {
                    FindingKind::Truncated
                } else {
                    FindingKind::BadRecord
                };
                inspection.findings.push(Finding::error(
                    kind,
                    path,
                    format!("damaged LitData chunk: {e}"),
                ));
                return inspection;
            }
        };
        if wrap == Wrap::Chunk
            && let Some(inflated) = &inflated
        {
            inspection
                .facts
                .insert(INFLATED.into(), Value::from(inflated.len() as u64));
        }
        let data = inflated.as_ref().unwrap_or(&self.data);
        let offsets = match chunk::offsets(data) {
            Ok(offsets) => offsets,
            Err(e) => {
                let kind = match e {
                    ChunkError::Header { .. }
                    | ChunkError::PastEnd { .. }
                    | ChunkError::FooterTruncated { .. } => FindingKind::Truncated,
                    ChunkError::Trailing { .. } => FindingKind::TrailingData,
                    _ => FindingKind::BadHeader,
                };
                inspection.findings.push(Finding::error(
                    kind,
                    path,
                    format!("damaged LitData chunk: {e}"),
                ));
                return inspection;
            }
        };
        let items = offsets.len() as u64 - 1;
        inspection.samples = Some(items);
        if let Some(leaves) = &self.leaves {
            let arrow_only = items > 0 && offsets[0] == offsets[items as usize];
            if arrow_only && leaves.count > 0 {
                footer_keys(
                    data,
                    offsets[items as usize],
                    items,
                    leaves,
                    path,
                    &mut inspection,
                );
            }
            for i in 0..items {
                if arrow_only && leaves.count > 0 {
                    break;
                }
                let (start, end) = (offsets[i as usize], offsets[i as usize + 1]);
                match chunk::split_item(&data[start as usize..end as usize], leaves.count, i) {
                    Ok(values) => {
                        if let Some(finding) = json_finding(&values, leaves, i, path) {
                            inspection.findings.push(finding.at(start));
                        }
                        if !leaves.keyed {
                            continue;
                        }
                        let key = String::from_utf8_lossy(values[0]).into_owned();
                        if i == 0 {
                            inspection.first_key = Some(key.clone());
                        }
                        inspection.last_key = Some(key);
                    }
                    Err(e) => inspection.findings.push(
                        Finding::error(
                            FindingKind::BadRecord,
                            path,
                            format!("damaged LitData chunk: {e}"),
                        )
                        .at(start),
                    ),
                }
            }
        }
        inspection
            .facts
            .insert("litdata.items".into(), Value::from(items));
        inspection
    }
}

/// A `json` leaf of item `item` (its leaf values `values`) that does not decode.
fn json_finding(values: &[&[u8]], leaves: &Leaves, item: u64, path: &str) -> Option<Finding> {
    leaves.json.iter().find_map(|(l, name)| {
        let why = match nested::to_json(values.get(*l)?) {
            Ok(_) => return None,
            Err(Problem::Corrupt(why) | Problem::Unsupported(why)) => why,
        };
        Some(Finding::error(
            FindingKind::BadRecord,
            path,
            format!("damaged LitData chunk: item {item} leaf `{name}` {why}"),
        ))
    })
}

/// Reads the Arrow footer that holds a chunk's `items` items (its last item ending at
/// `last`): a footer that cannot be read, or of other rows, is a finding; the keys of
/// its first and last rows are the chunk's first and last keys.
fn footer_keys(
    data: &[u8],
    last: u64,
    items: u64,
    leaves: &Leaves,
    path: &str,
    inspection: &mut Inspection,
) {
    let key = [KEY];
    let wanted: &[&str] = if leaves.keyed { &key } else { &[] };
    let rows = chunk::footer(data, last)
        .ok()
        .flatten()
        .ok_or(None)
        .and_then(|range| footer::read(&data[range]).map_err(Some))
        .and_then(|batches| FooterRows::new(&batches, wanted, items).map_err(Some));
    match rows {
        Ok(rows) if leaves.keyed => {
            let key = |row| {
                String::from_utf8_lossy(&rows.stored(0, row).unwrap_or_default()).into_owned()
            };
            inspection.first_key = Some(key(0));
            inspection.last_key = Some(key(items - 1));
        }
        Ok(_) => {}
        Err(e) => inspection.findings.push(
            Finding::error(
                FindingKind::BadRecord,
                path,
                format!(
                    "damaged LitData chunk: {}",
                    e.map_or(
                        "its items are empty and it has no Arrow footer".to_string(),
                        |e| e.to_string()
                    )
                ),
            )
            .at(last),
        ),
    }
}

/// Compares every LitData `index.json` under the root with the chunks it lists
/// (present, size, item count), and reports chunks beside it that it does not list.
pub fn check_indices(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    manifest: Option<&Manifest>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for index_path in files
        .keys()
        .filter(|p| *p == INDEX || p.ends_with("/index.json"))
    {
        let Ok(bytes) = std::fs::read(root.join(index_path)) else {
            continue;
        };
        let Ok(index) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        if !is_litdata_index(&index) {
            continue;
        }
        let invalid =
            |message: String| Finding::error(FindingKind::IndexInvalid, index_path, message);
        let compression = Compression::of_config(&index["config"]).ok();
        if leaves_of(&index).is_none() {
            findings.push(invalid(
                "config's data_spec and data_format do not name the same leaves".into(),
            ));
        }
        let dir = index_path.rsplit_once('/').map_or("", |(d, _)| d);
        let join = |name: &str| match dir {
            "" => name.to_string(),
            d => format!("{d}/{name}"),
        };
        let mut listed = BTreeSet::new();
        for (i, entry) in index["chunks"].as_array().into_iter().flatten().enumerate() {
            let Some(name) = entry["filename"].as_str() else {
                findings.push(invalid(format!("chunk {i} has no filename")));
                continue;
            };
            let rel = join(name);
            listed.insert(rel.clone());
            let Some(&size) = files.get(&rel) else {
                findings.push(Finding::error(
                    FindingKind::MissingFile,
                    &rel,
                    format!("{index_path} lists this chunk (entry {i}) but it is not there"),
                ));
                continue;
            };
            // A `chunk`-wrapped chunk's chunk_bytes is its size inflated; the others' the
            // file's.
            let inflated = inspections
                .get(&rel)
                .and_then(|s| s.facts.get(INFLATED))
                .and_then(Value::as_u64);
            let (size, what) = match inflated {
                Some(inflated) => (Some(inflated), "inflates to"),
                // Not inflated (a finding of its own says why): no size to compare.
                None if compression
                    .as_ref()
                    .is_none_or(|c| c.wrap_of(&rel) == Wrap::Chunk) =>
                {
                    (None, "")
                }
                None => (Some(size), "is"),
            };
            if let Some(size) = size
                && entry["chunk_bytes"].as_u64() != Some(size)
            {
                findings.push(Finding::error(
                    FindingKind::IndexMismatch,
                    &rel,
                    format!(
                        "{what} {size} bytes, {index_path} says {} (chunk entry {i})",
                        entry["chunk_bytes"]
                    ),
                ));
            }
            if let Some(samples) = inspections.get(&rel).and_then(|s| s.samples)
                && entry["chunk_size"].as_u64() != Some(samples)
            {
                findings.push(Finding::error(
                    FindingKind::SampleCountMismatch,
                    &rel,
                    format!(
                        "holds {samples} items, {index_path} says {} (chunk entry {i})",
                        entry["chunk_size"]
                    ),
                ));
            }
        }
        let in_manifest =
            |path: &str| manifest.is_none_or(|m| m.files.iter().any(|f| f.path == path));
        for path in files.keys().filter(|p| {
            is_chunk_name(p)
                && p.rsplit_once('/').map_or("", |(d, _)| d) == dir
                && !listed.contains(*p)
        }) {
            if in_manifest(path) {
                findings.push(Finding::error(
                    FindingKind::UnlistedFile,
                    path,
                    format!("LitData chunk {index_path} does not list: readers never see it"),
                ));
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::is_chunk_name;

    #[test]
    fn chunk_names_are_told() {
        for name in [
            "chunk-0-0.bin",
            "a/chunk-12-345.bin",
            "chunk-1-2.zstd.bin",
            "chunk-1-2.zstd:19.bin",
        ] {
            assert!(is_chunk_name(name), "{name}");
        }
        for name in [
            "chunk-0.bin",
            "chunk-a-0.bin",
            "chunk-0-0.mds",
            "shard.00000.mds",
            "xchunk-0-0.bin",
            "chunk-0-0.zstd:.bin",
            "chunk-0-0.gz.bin",
        ] {
            assert!(!is_chunk_name(name), "{name}");
        }
    }
}
