//! Tensor digests in manifests: `manifest --tensors` records every tensor of every
//! checkpoint file (name, dtype, shape, the SHA-256 of its canonical form), and
//! `verify` names the tensors that changed in a file whose bytes changed.
//!
//! Recording reads the checkpoint files a second time, after the pass that hashed
//! them (positioned reads of the tensor data only). Verifying re-reads only the files
//! whose size or SHA-256 differs from the manifest: a file with its recorded bytes
//! has its recorded tensors.

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;
use shardsmith_manifest::{CHANGED, Finding, FindingKind, Inspection, Manifest, TensorRecord};

use super::canon::digest;
use super::files::of_file;
use super::model::Tensor;
use crate::Error;

/// Formats whose files carry tensor records (a DCP checkpoint on its `.metadata`).
const RECORDED: &[&str] = &["safetensors", "torch_zip", "torch_legacy", "dcp_metadata"];

/// A checkpoint file whose tensors were not recorded, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotRecorded {
    /// The file, relative to the directory.
    pub path: String,
    /// Why.
    pub reason: String,
}

fn records(tensors: &[Tensor]) -> Result<Vec<TensorRecord>, Error> {
    tensors
        .par_iter()
        .map(|t| {
            Ok(TensorRecord {
                name: t.name.clone(),
                dtype: t.dtype_name(),
                shape: t.shape.clone(),
                sha256: digest(t)?,
            })
        })
        .collect()
}

/// Fills the tensor records of every checkpoint file of `manifest` (files under
/// `root`) and re-seals it. Files whose tensors shardsmith does not read (a big-endian
/// save) are returned, not recorded; a checkpoint whose tensors cannot be read is an
/// error.
pub fn record(root: &Path, manifest: &mut Manifest) -> Result<Vec<NotRecorded>, Error> {
    let results: Vec<Result<Option<Vec<TensorRecord>>, Error>> = manifest
        .files
        .par_iter()
        .map(|entry| {
            let format = entry.format.as_deref().unwrap_or_default();
            if !RECORDED.contains(&format) {
                return Ok(None);
            }
            match of_file(&root.join(&entry.path), &entry.path)? {
                Some(tensors) => records(&tensors).map(Some),
                None => Ok(None),
            }
        })
        .collect();
    let mut skipped = Vec::new();
    for (entry, result) in manifest.files.iter_mut().zip(results) {
        match result {
            Ok(Some(mut records)) => {
                records.sort_by(|a, b| a.name.cmp(&b.name));
                entry.tensors = records;
            }
            Ok(None) => {}
            Err(Error::Unsupported { reason, .. }) => skipped.push(NotRecorded {
                path: entry.path.clone(),
                reason,
            }),
            Err(e) => return Err(e),
        }
    }
    manifest.seal();
    Ok(skipped)
}

/// The tensor findings of a `verify` against `manifest`: for each file with tensor
/// records whose bytes changed (a DCP `.metadata` also when one of its data files
/// did), the tensors that are gone, new, or differ in dtype, shape or data.
pub fn check(
    root: &Path,
    manifest: &Manifest,
    inspections: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let changed = |rel: &str| {
        inspections
            .get(rel)
            .is_some_and(|i| i.facts.get(CHANGED).and_then(|v| v.as_bool()) == Some(true))
    };
    let mut out = Vec::new();
    for entry in manifest.files.iter().filter(|e| !e.tensors.is_empty()) {
        let dcp_changed = entry.path.ends_with(".metadata") && {
            let dir = entry.path.rsplit_once('/').map_or("", |(d, _)| d);
            inspections.keys().any(|rel| {
                rel.ends_with(".distcp")
                    && rel.rsplit_once('/').map_or("", |(d, _)| d) == dir
                    && changed(rel)
            })
        };
        if !changed(&entry.path) && !dcp_changed {
            continue;
        }
        out.extend(compare_file(root, &entry.path, &entry.tensors));
    }
    out
}

fn compare_file(root: &Path, rel: &str, recorded: &[TensorRecord]) -> Vec<Finding> {
    let err = |message: String| Finding::error(FindingKind::TensorMismatch, rel, message);
    let tensors = match of_file(&root.join(rel), rel) {
        Ok(Some(tensors)) => tensors,
        Ok(None) => return vec![err("its tensors cannot be read any more".into())],
        Err(e) => return vec![err(format!("its tensors cannot be read any more: {e}"))],
    };
    let now: BTreeMap<&str, &Tensor> = tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    let before: BTreeMap<&str, &TensorRecord> =
        recorded.iter().map(|r| (r.name.as_str(), r)).collect();
    let pairs: Vec<(&TensorRecord, Option<&Tensor>)> = recorded
        .iter()
        .map(|r| (r, now.get(r.name.as_str()).copied()))
        .collect();
    let digests: Vec<Option<Result<String, Error>>> = pairs
        .par_iter()
        .map(|(r, t)| {
            t.filter(|t| t.dtype_name() == r.dtype && t.shape == r.shape)
                .map(digest)
        })
        .collect();
    let mut out = Vec::new();
    let mut same = 0usize;
    for ((record, tensor), digest) in pairs.into_iter().zip(digests) {
        let what = format!(
            "tensor `{}` ({} {:?})",
            record.name, record.dtype, record.shape
        );
        match (tensor, digest) {
            (None, _) => out.push(err(format!("{what} is gone"))),
            (Some(t), None) => out.push(err(format!(
                "{what} is now {} {:?}",
                t.dtype_name(),
                t.shape
            ))),
            (Some(_), Some(Err(e))) => out.push(err(format!("{what} cannot be read: {e}"))),
            (Some(_), Some(Ok(d))) if d != record.sha256 => out.push(
                err(format!("{what}: its data differs from the manifest"))
                    .values(&record.sha256, d),
            ),
            (Some(_), Some(Ok(_))) => same += 1,
        }
    }
    for t in &tensors {
        if !before.contains_key(t.name.as_str()) {
            out.push(err(format!(
                "tensor `{}` ({} {:?}) is not in the manifest",
                t.name,
                t.dtype_name(),
                t.shape
            )));
        }
    }
    if out.is_empty() {
        out.push(Finding::warning(
            FindingKind::TensorMismatch,
            rel,
            format!(
                "the file changed but all {same} recorded tensors have their recorded dtype, shape and data (only the container differs)"
            ),
        ));
    }
    out
}
