//! DCP checkpoints across their files: `.metadata` against its data files (every file
//! it references present, every item inside its file and not overlapping another, the
//! data as `dcp.load` reads it held against what `.metadata` declares), data files it
//! does not reference, data files without `.metadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection};

use super::paths::{dir_of, fact_u64, join};

/// Every DCP finding of the files of a checked directory.
pub(super) fn check(
    root: &Path,
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    out: &mut Vec<Finding>,
) {
    let mut dirs_with_data: BTreeSet<&str> = BTreeSet::new();
    for rel in files.keys().filter(|r| r.ends_with(".distcp")) {
        dirs_with_data.insert(dir_of(rel));
    }
    let mut with_metadata = BTreeSet::new();
    for (rel, i) in inspections
        .iter()
        .filter(|(_, i)| i.format == "dcp_metadata")
    {
        let dir = dir_of(rel);
        with_metadata.insert(dir.to_string());
        // An unreadable .metadata (reported on its own) or one without storage entries
        // says nothing about which data files belong: no stale-file guesses then.
        let Some(items) = i
            .facts
            .get("dcp.storage")
            .and_then(Value::as_array)
            .filter(|items| !items.is_empty())
        else {
            continue;
        };
        let metadata = Metadata {
            files,
            inspections,
            rel,
            dir,
        };
        metadata.check_ranges(items, out);
        // The data as dcp.load reads it, held against .metadata: the one check `diff`
        // and `ls` make too (crate::tensors::dcp).
        let damaged = |file: &str| {
            inspections
                .get(file)
                .is_some_and(|i| i.facts.contains_key(crate::dcp::DAMAGED))
        };
        out.extend(crate::tensors::dcp::check(root, rel, &damaged));
        metadata.check_files(items, out);
    }
    for dir in dirs_with_data {
        if with_metadata.contains(dir) {
            continue;
        }
        let tmp = files.contains_key(&join(dir, ".metadata.tmp"));
        out.push(Finding::error(
            FindingKind::MissingFile,
            join(dir, ".metadata"),
            if tmp {
                "DCP data files without .metadata, next to .metadata.tmp: the save was interrupted while finishing; this checkpoint cannot be loaded"
            } else {
                "DCP data files without .metadata (written last by a save): the save did not complete, or .metadata was deleted"
            },
        ));
    }
}

/// One `.metadata` (`rel`, in the directory `dir`) with the files checked beside it.
struct Metadata<'a> {
    files: &'a BTreeMap<String, u64>,
    inspections: &'a BTreeMap<String, Inspection>,
    rel: &'a str,
    dir: &'a str,
}

impl Metadata<'_> {
    /// Every data file the `storage_data` `items` name is present, and holds its items
    /// within its length and without overlaps.
    fn check_ranges(&self, items: &[Value], out: &mut Vec<Finding>) {
        let rel = self.rel;
        let mut referenced: BTreeMap<String, Vec<(u64, u64, String)>> = BTreeMap::new();
        for item in items {
            let (Some(fqn), Some(file), Some(offset), Some(length)) = (
                item[0].as_str(),
                item[1].as_str(),
                item[2].as_u64(),
                item[3].as_u64(),
            ) else {
                continue;
            };
            referenced.entry(join(self.dir, file)).or_default().push((
                offset,
                offset.saturating_add(length),
                fqn.to_string(),
            ));
        }
        for (file, ranges) in referenced {
            let Some(&size) = self.files.get(&file) else {
                out.push(Finding::error(
                    FindingKind::MissingFile,
                    &file,
                    format!(
                        "{rel} stores {} item(s) in this file, which is not present (a missing rank file: dcp.load fails with FileNotFoundError)",
                        ranges.len()
                    ),
                ));
                continue;
            };
            self.check_file_ranges(&file, size, ranges, out);
        }
    }

    /// The item `ranges` (start, end, fqn) stored in `file` of `size` bytes: within it
    /// and not overlapping.
    fn check_file_ranges(
        &self,
        file: &str,
        size: u64,
        mut ranges: Vec<(u64, u64, String)>,
        out: &mut Vec<Finding>,
    ) {
        let rel = self.rel;
        // Tensors of a safetensors-format file all record the blob's start as their
        // offset: those are not slices (the blob is checked as safetensors).
        let blob = self
            .inspections
            .get(file)
            .and_then(|i| fact_u64(i, "safetensors_at"));
        ranges.sort();
        let mut prev_end = 0;
        for (start, end, fqn) in &ranges {
            if Some(*start) == blob {
                continue;
            }
            if *end > size {
                out.push(
                    Finding::error(
                        FindingKind::Truncated,
                        file,
                        format!("item `{fqn}` of {rel} lies at bytes {start}..{end}, past the end of the {size}-byte file"),
                    )
                    .range(*start, *end)
                    .values(end, size),
                );
            }
            if *start < prev_end {
                out.push(
                    Finding::error(
                        FindingKind::BadLayout,
                        file,
                        format!("item `{fqn}` of {rel} overlaps the previous item"),
                    )
                    .range(*start, prev_end),
                );
            }
            prev_end = prev_end.max(*end);
        }
    }

    /// The data files as a whole: safetensors blobs `dcp.load` cannot read, and data
    /// files beside `.metadata` that it does not reference.
    fn check_files(&self, items: &[Value], out: &mut Vec<Finding>) {
        let (rel, dir) = (self.rel, self.dir);
        let referenced_files: BTreeSet<String> = items
            .iter()
            .filter_map(|it| it[1].as_str().map(|f| join(dir, f)))
            .collect();
        let blobs: Vec<&str> = referenced_files
            .iter()
            .filter(|f| {
                self.inspections
                    .get(*f)
                    .is_some_and(|i| i.facts.contains_key("safetensors_at"))
            })
            .map(String::as_str)
            .collect();
        if let Some(first) = blobs.first() {
            out.push(Finding::error(
                FindingKind::BadLayout,
                rel,
                format!(
                    "saved with serialization_format=SAFETENSORS ({} data file(s) hold a safetensors blob, {first} first): dcp.load cannot read it, since torch's FileSystemReader reads every item with torch.load (torch 2.15: \"Weights only load failed\"); the blobs were checked as safetensors",
                    blobs.len()
                ),
            ));
        }
        for file in self.files.keys().filter(|f| {
            f.ends_with(".distcp") && dir_of(f) == dir && !referenced_files.contains(*f)
        }) {
            out.push(Finding::warning(
                FindingKind::StaleFile,
                file,
                format!("data file not referenced by {rel}: left by an earlier save into the same directory (DCP never cleans it)"),
            ));
        }
    }
}
