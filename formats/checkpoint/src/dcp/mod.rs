//! DCP data files (`__R_I.distcp`), checked as `dcp.load` reads them: item by item, at
//! the byte ranges `.metadata` records (`storage_data`). Saved with the default
//! `TORCH_SAVE` format an item is a complete torch zip; with the ZStandard extension it
//! is a zstd frame decoding to one ([`item`]); saved with
//! `serialization_format=SAFETENSORS` the file's tensors sit in one safetensors blob
//! after the zips of its non-tensor items ([`blob`]). Bytes after the last item are
//! trailing data, which `dcp.load` never reads. A file no readable `.metadata`
//! references is split by its own structure: zips walked back from its end, a blob
//! after them.

mod blob;
mod item;
pub mod meta;
pub mod transform;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use serde_json::json;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use self::item::ItemCheck;
use self::meta::Item;
use super::report::Settings;
use super::safetensors::SafetensorsInspector;
use super::zip::{self, Located, ZipInspector};

/// The fact of a data file that has error findings of its own.
pub const DAMAGED: &str = "dcp.damaged";

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: &[u8; 4] = b"\x28\xb5\x2f\xfd";

/// How a data file is split into parts before it is read.
#[derive(Default)]
pub struct Plan {
    /// Its torch zips (the plain items), in file order.
    located: Located,
    /// What findings call each zip (the item it is), when `.metadata` says.
    labels: Vec<Option<String>>,
    /// The first byte of its safetensors blob.
    blob: Option<u64>,
    /// Its items stored through transforms.
    transformed: Vec<(Item, Vec<transform::Transform>)>,
    /// Findings made while splitting it.
    notes: Vec<Finding>,
}

/// Splits the DCP data file `rel` (under `root`, `size` bytes, starting with `head`).
pub fn locate(root: &Path, rel: &str, file: &mut File, size: u64, head: &[u8]) -> Plan {
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    match meta::items_of(&root.join(dir), name) {
        Some(items) if !items.is_empty() => by_items(rel, file, size, items),
        _ => by_structure(rel, file, size, head),
    }
}

/// The parts of a file `.metadata` stores `items` in (sorted by offset).
fn by_items(rel: &str, file: &mut File, size: u64, items: Vec<Item>) -> Plan {
    let mut plan = Plan {
        blob: blob::from_items(file, size, &items),
        ..Plan::default()
    };
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let mut read_to = 0u64;
    let mut items_to = 0u64;
    for item in items {
        if Some(item.offset) == plan.blob {
            read_to = size;
            continue;
        }
        read_to = read_to.max(item.end());
        if item.end() > size {
            continue; // past the end of the file: a layout finding
        }
        if item.offset < items_to {
            continue; // overlaps the item before it: a layout finding, never read twice
        }
        if !item.transforms.is_empty() {
            match transform::parse(&item.transforms) {
                Ok(t) => {
                    items_to = item.end();
                    plan.transformed.push((item, t));
                }
                Err(transform::UnknownTransform(d)) => *unknown.entry(d).or_default() += 1,
            }
            continue;
        }
        let found = zip::locate(file, item.end(), false);
        match found.archives.into_iter().next() {
            Some(mut archive) if archive.start == item.offset => {
                let index = plan.located.archives.len();
                for e in &mut archive.entries {
                    e.archive = index;
                }
                items_to = archive.end;
                plan.located.archives.push(archive);
                plan.labels.push(Some(item.label()));
            }
            found_one => {
                let why = match (found_one, found.damage) {
                    (Some(a), _) => format!(
                        "the zip archive that ends there starts at byte {}, not at the item's first byte",
                        a.start
                    ),
                    (None, Some(d)) => d.message,
                    (None, None) => "no zip archive ends there".into(),
                };
                plan.notes.push(
                    Finding::error(
                        FindingKind::BadHeader,
                        rel,
                        format!(
                            "{} at bytes {}..{}: {why}; dcp.load fails reading it",
                            item.label(),
                            item.offset,
                            item.end()
                        ),
                    )
                    .range(item.offset, item.end()),
                );
            }
        }
    }
    for (descriptor, count) in unknown {
        plan.notes.push(Finding::warning(
            FindingKind::UnsupportedTransform,
            rel,
            format!(
                "{count} item(s) stored through transform `{descriptor}`, which shardsmith does not know: their bytes were not checked (dcp.load reads them only with that extension registered)"
            ),
        ));
    }
    if read_to < size {
        plan.notes.push(
            Finding::warning(
                FindingKind::TrailingData,
                rel,
                format!(
                    "{} byte(s) after the last item .metadata records (it ends at byte {read_to}): dcp.load never reads them",
                    size - read_to
                ),
            )
            .range(read_to, size),
        );
    }
    plan
}

/// The parts of a file no readable `.metadata` describes: zips back to back from byte
/// 0 to its end, or to a safetensors blob after them.
fn by_structure(rel: &str, file: &mut File, size: u64, head: &[u8]) -> Plan {
    let located = zip::locate(file, size, true);
    if located.damage.is_none() {
        return Plan {
            located,
            ..Plan::default()
        };
    }
    if let Some(base) = blob::scan(file, size) {
        return Plan {
            located: zip::locate(file, base, true),
            blob: Some(base),
            ..Plan::default()
        };
    }
    if head.starts_with(ZSTD_MAGIC) {
        return Plan {
            notes: vec![Finding::warning(
                FindingKind::UnsupportedTransform,
                rel,
                "holds zstd-compressed items (the ZStandard extension): without a .metadata that records where each one lies they cannot be told apart, so they were not checked",
            )],
            ..Plan::default()
        };
    }
    Plan {
        located,
        ..Plan::default()
    }
}

/// Checks a DCP data file: its zips, its safetensors blob and its transformed items.
pub struct DcpDataInspector {
    zip: ZipInspector,
    blob: Option<(u64, SafetensorsInspector)>,
    items: Vec<ItemCheck>,
    notes: Vec<Finding>,
    pos: u64,
}

impl DcpDataInspector {
    /// A checker for `rel` split by [`locate`].
    pub fn new(rel: &str, plan: Plan, settings: Settings) -> Self {
        let blob = plan.blob.map(|base| {
            let shifted = Settings {
                size: settings.size - base,
                scan_values: settings.scan_values,
                holes: settings
                    .holes
                    .iter()
                    .filter(|h| h.1 > base)
                    .map(|&(s, e)| (s.saturating_sub(base), e - base))
                    .collect(),
            };
            (
                base,
                SafetensorsInspector::new(rel, shifted).at_file_offset(base),
            )
        });
        let items = plan
            .transformed
            .into_iter()
            .map(|(item, t)| ItemCheck::new(rel, item, t, settings.scan_values))
            .collect();
        Self {
            zip: ZipInspector::new(rel, "dcp_data", plan.located, settings)
                .with_labels(plan.labels),
            blob,
            items,
            notes: plan.notes,
            pos: 0,
        }
    }
}

impl Inspector for DcpDataInspector {
    fn update(&mut self, data: &[u8]) {
        self.zip.update(data);
        let end = self.pos + data.len() as u64;
        if let Some((base, st)) = self.blob.as_mut()
            && end > *base
        {
            let skip = base.saturating_sub(self.pos) as usize;
            st.update(&data[skip..]);
        }
        for item in &mut self.items {
            let (start, stop) = item.range();
            if start < end && self.pos < stop {
                item.update(self.pos, data);
            }
        }
        self.pos = end;
    }

    fn finish(self: Box<Self>) -> Inspection {
        let this = *self;
        let mut inspection = Box::new(this.zip).finish();
        inspection.findings.extend(this.notes);
        for item in this.items {
            inspection.findings.extend(item.finish());
        }
        if let Some((base, st)) = this.blob {
            let blob = Box::new(st).finish();
            for mut f in blob.findings {
                f.offset = f.offset.map(|o| o + base);
                f.end = f.end.map(|e| e + base);
                inspection.findings.push(f);
            }
            let mut names = inspection
                .facts
                .remove("tensors")
                .unwrap_or_else(|| json!([]));
            if let (Some(names), Some(more)) = (
                names.as_array_mut(),
                blob.facts.get("tensors").and_then(|t| t.as_array()),
            ) {
                names.extend(more.iter().cloned());
            }
            inspection.facts.insert("tensors".into(), names);
            inspection
                .facts
                .insert("safetensors_at".into(), json!(base));
        }
        // Findings leave the inspection before the layout checks run: whether the
        // file is damaged stays, so that they do not report the damage again.
        if inspection.findings.iter().any(Finding::is_error) {
            inspection.facts.insert(DAMAGED.into(), json!(true));
        }
        inspection
    }
}

#[cfg(test)]
mod tests;
