//! Splitting a DCP data file into parts before it is read: by the items its
//! `.metadata` records where one does, else by its own structure.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use shardsmith_manifest::{Finding, FindingKind};

use super::blob;
use super::meta::{self, Item};
use super::transform;
use crate::zip::{self, Located};

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: &[u8; 4] = b"\x28\xb5\x2f\xfd";

/// How a data file is split into parts before it is read.
#[derive(Default)]
pub struct Plan {
    /// Its torch zips (the plain items), in file order.
    pub(super) located: Located,
    /// What findings call each zip (the item it is), when `.metadata` says.
    pub(super) labels: Vec<Option<String>>,
    /// The first byte of its safetensors blob.
    pub(super) blob: Option<u64>,
    /// Its items stored through transforms.
    pub(super) transformed: Vec<(Item, Vec<transform::Transform>)>,
    /// Findings made while splitting it.
    pub(super) notes: Vec<Finding>,
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
pub(super) fn by_items(rel: &str, file: &mut File, size: u64, items: Vec<Item>) -> Plan {
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
        if let Some(end) = add_zip_item(&mut plan, rel, file, &item) {
            items_to = end;
        }
    }
    add_notes(&mut plan, rel, unknown, read_to, size);
    plan
}

/// Takes the torch zip `.metadata` says is `item` into `plan` and gives the zip's end;
/// a finding instead when no zip archive starts at the item's first byte.
fn add_zip_item(plan: &mut Plan, rel: &str, file: &mut File, item: &Item) -> Option<u64> {
    let found = zip::locate(file, item.end(), false);
    match found.archives.into_iter().next() {
        Some(mut archive) if archive.start == item.offset => {
            let index = plan.located.archives.len();
            for e in &mut archive.entries {
                e.archive = index;
            }
            let end = archive.end;
            plan.located.archives.push(archive);
            plan.labels.push(Some(item.label()));
            Some(end)
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
            None
        }
    }
}

/// The notes of a file split by its items: items in transforms shardsmith does not
/// know (`unknown`, counted by descriptor), and bytes past `read_to`, the end of the
/// last item.
fn add_notes(
    plan: &mut Plan,
    rel: &str,
    unknown: BTreeMap<String, usize>,
    read_to: u64,
    size: u64,
) {
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
