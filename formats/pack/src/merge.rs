//! `shardsmith merge`: one dataset from parts written separately (a Slurm array job,
//! `pack --rank/--world-size`). Each part is a directory directly inside the output.
//! MDS parts get a root `index.json` the way streaming's `merge_index` builds it (each
//! shard's basename prefixed with its part's directory name); WebDataset parts that all
//! hold a `wids-index.json` get a root one (each URL under its part), and a root Energon
//! `.nv-meta/` when all hold one ([`super::merge_energon`]); every format gets a root
//! manifest listing every part's files, taken from the parts' manifests (no re-read).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use shardsmith_manifest::{
    DEFAULT_CHUNK_SIZE, Digester, FileEntry, MANIFEST_FILE, Manifest, ManifestKind, SUMS_FILE,
};

use shardsmith_shard::FormatKind;
use shardsmith_shard::mds::pyjson;
use shardsmith_shard::webdataset::wids;
use shardsmith_store::{LocalDir, OutputSink};

use crate::{Error, Result};

/// What a merge produced.
#[derive(Debug)]
pub struct MergeReport {
    /// The root manifest written.
    pub manifest: Manifest,
    /// Part directory names, in merge order.
    pub parts: Vec<String>,
    /// Whether a root MDS `index.json` was written.
    pub index: bool,
}

/// Orders part names numerically when they are numbers (`2` before `10`).
fn part_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// Merges `parts` (all directories directly inside `output`; every such directory with a
/// manifest when `parts` is empty) into `output`.
pub fn merge(output: &Path, parts: &[PathBuf]) -> Result<MergeReport> {
    let out = output
        .canonicalize()
        .map_err(|e| Error::io("opening", output, e))?;
    let mut names: Vec<String> = Vec::new();
    if parts.is_empty() {
        for entry in std::fs::read_dir(&out).map_err(|e| Error::io("reading directory", &out, e))? {
            let entry = entry.map_err(|e| Error::io("reading directory", &out, e))?;
            if entry.path().join(MANIFEST_FILE).is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort_by(|a, b| part_order(a, b));
    } else {
        for part in parts {
            // A part is named as it sits inside OUTPUT (`merge out 0 1`); a path that
            // already leads into OUTPUT (`merge out out/0`) is accepted too.
            let inside = output.join(part);
            let chosen = if part.is_relative() && inside.exists() {
                &inside
            } else {
                part
            };
            let full = chosen
                .canonicalize()
                .map_err(|e| Error::io("opening part", &inside, e))?;
            if full.parent() != Some(out.as_path()) {
                return Err(Error::Merge(format!(
                    "part `{}` must be a directory directly inside `{}`: readers resolve shard names relative to the index",
                    part.display(),
                    output.display()
                )));
            }
            names.push(
                full.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    if names.is_empty() {
        return Err(Error::Merge(format!(
            "no parts to merge in `{}` (no sub-directory holds a manifest.json)",
            output.display()
        )));
    }
    let sink = LocalDir::create(&out)?;
    merge_parts(&sink, names)
}

/// The parts inside `sink`: every top-level entry holding a manifest, in numeric order.
pub fn parts_in(sink: &dyn OutputSink) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for name in sink.list()? {
        if sink.size(&format!("{name}/{MANIFEST_FILE}"))?.is_some() {
            names.push(name);
        }
    }
    names.sort_by(|a, b| part_order(a, b));
    Ok(names)
}

/// Merges the parts `names` (directories directly inside `sink`, each with its own
/// manifest) into `sink`: the root `index.json` (MDS) and manifest, written last. Reads
/// only the parts' small files (manifests, `SHA256SUMS`, `index.json`), so a prefix in an
/// object store merges as a local directory does.
pub fn merge_parts(sink: &dyn OutputSink, names: Vec<String>) -> Result<MergeReport> {
    let read = |name: &str| -> Result<Option<Vec<u8>>> { Ok(sink.read(name)?) };
    check_not_own(sink)?;
    let mut files = Vec::new();
    let mut shards = Vec::new();
    let mut format: Option<Option<String>> = None;
    let mut every_part_indexed = true;
    let mut wids_shards = Some(Vec::new());
    for name in &names {
        let part = part_manifest(sink, name)?;
        match &format {
            None => format = Some(part.format.clone()),
            Some(f) if *f != part.format => {
                return Err(Error::Merge(format!(
                    "part `{name}` is {} but earlier parts are {}",
                    part.format.as_deref().unwrap_or("not a pack output"),
                    f.as_deref().unwrap_or("not a pack output")
                )));
            }
            _ => {}
        }
        for entry in &part.files {
            let mut entry = entry.clone();
            entry.path = format!("{name}/{}", entry.path);
            files.push(entry);
        }
        for extra in [MANIFEST_FILE, SUMS_FILE] {
            if let Some(bytes) = read(&format!("{name}/{extra}"))? {
                files.push(entry_for(&format!("{name}/{extra}"), &bytes));
            }
        }
        if !part_shards(sink, name, &mut shards)? {
            every_part_indexed = false;
        }
        if let Some(list) = &mut wids_shards
            && !part_wids(sink, name, list)?
        {
            wids_shards = None;
        }
    }
    let index = every_part_indexed && !shards.is_empty();
    if index {
        let bytes = pyjson::dumps(&json!({"shards": shards, "version": 2})).into_bytes();
        sink.write_atomic("index.json", &bytes)?;
        files.push(entry_for("index.json", &bytes));
    }
    if let Some(mut list) = wids_shards.filter(|list| !list.is_empty()) {
        let bytes = wids::index_bytes(&mut list);
        sink.write_atomic(wids::WIDS_INDEX, &bytes)?;
        files.push(entry_for(wids::WIDS_INDEX, &bytes));
    }
    files.extend(super::merge_energon::root_energon(sink, &names)?);
    if let Some(kind) = format
        .as_ref()
        .and_then(|f| f.as_deref())
        .and_then(FormatKind::from_name)
    {
        files.extend(format_root(sink, kind, &names)?);
    }
    let mut manifest = Manifest::new(ManifestKind::Pack, DEFAULT_CHUNK_SIZE, files);
    manifest.format = format.flatten();
    manifest
        .options
        .insert("merged_parts".into(), Value::from(names.clone()));
    manifest.recount();
    manifest.seal();
    shardsmith_manifest::commit(&manifest.files, &manifest.to_json_bytes(), |name, bytes| {
        sink.write_atomic(name, bytes)
    })?;
    Ok(MergeReport {
        manifest,
        parts: names,
        index,
    })
}

/// The root dataset files the format makes over the parts (Hugging Face's `state.json`
/// and `dataset_info.json`, LitData's `index.json`), from each part's own.
fn format_root(
    sink: &dyn OutputSink,
    kind: FormatKind,
    names: &[String],
) -> Result<Vec<FileEntry>> {
    let wanted = kind.def().part_files();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut parts = Vec::with_capacity(names.len());
    for name in names {
        let mut own = Vec::with_capacity(wanted.len());
        for file in wanted {
            own.push(
                sink.read(&format!("{name}/{file}"))?
                    .ok_or_else(|| Error::Merge(format!("part `{name}` has no {file}")))?,
            );
        }
        parts.push((name.as_str(), own));
    }
    let made = kind
        .def()
        .merged_files(&parts)
        .map_err(|e| Error::Merge(e.to_string()))?;
    Ok(shardsmith_shard::format::write_files(sink, made)?)
}

/// Refuses an output that holds a dataset of its own; an earlier merge's manifest is
/// merged over.
fn check_not_own(sink: &dyn OutputSink) -> Result<()> {
    if let Some(bytes) = sink.read(MANIFEST_FILE)? {
        let merged_before = Manifest::parse(&bytes, Path::new(MANIFEST_FILE))
            .is_ok_and(|(m, _)| m.options.contains_key("merged_parts"));
        if !merged_before {
            return Err(shardsmith_store::Error::OutputConflict {
                dir: sink.describe(),
                reason: "already holds a dataset of its own (its manifest is not a merge); merge into a directory that holds only the parts".into(),
            }
            .into());
        }
    }
    Ok(())
}

/// The manifest of part `name`.
fn part_manifest(sink: &dyn OutputSink, name: &str) -> Result<Manifest> {
    let manifest_name = format!("{name}/{MANIFEST_FILE}");
    let bytes = sink
        .read(&manifest_name)?
        .ok_or_else(|| Error::Merge(format!("part `{name}` has no {MANIFEST_FILE}")))?;
    let shown = Path::new(&sink.describe()).join(&manifest_name);
    let (part, _) =
        Manifest::parse(&bytes, &shown).map_err(|e| Error::Merge(format!("part `{name}`: {e}")))?;
    Ok(part)
}

/// The shard entries of part `name`'s `index.json`, their basenames put under `name`,
/// joined to `shards`; false when the part has no `index.json`.
fn part_shards(sink: &dyn OutputSink, name: &str, shards: &mut Vec<Value>) -> Result<bool> {
    let Some(bytes) = sink.read(&format!("{name}/index.json"))? else {
        return Ok(false);
    };
    let index: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Merge(format!("part `{name}`: index.json is not JSON: {e}")))?;
    let entries = index["shards"].as_array().cloned().unwrap_or_default();
    for mut entry in entries {
        for key in ["raw_data", "zip_data"] {
            if let Some(base) = entry[key]["basename"].as_str() {
                entry[key]["basename"] = Value::from(format!("{name}/{base}"));
            }
        }
        shards.push(entry);
    }
    Ok(true)
}

/// The shards of part `name`'s `wids-index.json`, their URLs put under `name`, joined
/// to `list`; false when the part has none (then the merge has none either).
fn part_wids(sink: &dyn OutputSink, name: &str, list: &mut Vec<wids::WidsShard>) -> Result<bool> {
    let Some(bytes) = sink.read(&format!("{name}/{}", wids::WIDS_INDEX))? else {
        return Ok(false);
    };
    let bad = |why: &str| Error::Merge(format!("part `{name}`: {}: {why}", wids::WIDS_INDEX));
    let index: Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    for entry in index["shardlist"]
        .as_array()
        .ok_or_else(|| bad("no shardlist"))?
    {
        let (Some(url), Some(nsamples), Some(filesize)) = (
            entry["url"].as_str(),
            entry["nsamples"].as_u64(),
            entry["filesize"].as_u64(),
        ) else {
            return Err(bad("an entry lacks url, nsamples or filesize"));
        };
        list.push(wids::WidsShard {
            url: format!("{name}/{url}"),
            nsamples,
            filesize,
        });
    }
    Ok(true)
}

fn entry_for(path: &str, bytes: &[u8]) -> FileEntry {
    let mut digester = Digester::new(DEFAULT_CHUNK_SIZE);
    digester.update(bytes);
    FileEntry::new(path, &digester.finish())
}
