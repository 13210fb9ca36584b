//! The coverage and lookup checks of a whole DCP `.metadata`: every tensor's chunks
//! against its shape, every chunk and bytes item against `storage_data`.

use std::collections::BTreeSet;

use shardsmith_manifest::{Finding, FindingKind};

use super::describe::{describe, dims};
use super::tiling::{Chunk, MAX_WORK, Problem, coverage_within};
use crate::pickle::{Id, Node, Pickle};

/// `torch.Size((a, b))` (a call of one tuple) or a plain tuple/list of non-negative
/// integers.
pub(crate) fn ints(p: &Pickle, id: Id) -> Option<Vec<u64>> {
    let id = match p.node(id) {
        Node::Call(_, args) => *p.items(*args)?.first()?,
        _ => id,
    };
    p.items(id)?
        .iter()
        .map(|&x| p.int(x).and_then(|v| u64::try_from(v).ok()))
        .collect()
}

fn class_is(p: &Pickle, id: Id, name: &str) -> bool {
    matches!(p.node(id), Node::Object { class, .. }
        if p.global_name(*class).is_some_and(|g| g.rsplit('.').next() == Some(name)))
}

/// The coverage and lookup findings of the DCP `.metadata` at `path`.
pub fn check(p: &Pickle, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(tensors) = p.get(p.root, "state_dict_metadata") else {
        return out;
    };
    let storage = p.get(p.root, "storage_data");
    let mut stored: BTreeSet<(&str, Option<Vec<u64>>)> = BTreeSet::new();
    for &(k, _) in storage.and_then(|s| p.dict_entries(s)).unwrap_or(&[]) {
        if let Some(fqn) = p.get(k, "fqn").and_then(|id| p.str(id)) {
            stored.insert((fqn, p.get(k, "offset").and_then(|o| ints(p, o))));
        }
    }
    let mut budget = MAX_WORK;
    let has_fqn = |fqn: &str| {
        stored
            .range((fqn, None)..)
            .next()
            .is_some_and(|s| s.0 == fqn)
    };
    for &(k, v) in p.dict_entries(tensors).unwrap_or(&[]) {
        let fqn = p.str(k).unwrap_or("?");
        let bad = |message: String| Finding::error(FindingKind::BadLayout, path, message);
        let Some(list) = p.get(v, "chunks") else {
            if class_is(p, v, "BytesStorageMetadata") && storage.is_some() && !has_fqn(fqn) {
                out.push(bad(format!(
                    "item `{fqn}` has no storage_data entry (dcp.load fails looking it up)"
                )));
            }
            continue;
        };
        let Some(shape) = p.get(v, "size").and_then(|s| ints(p, s)) else {
            out.push(bad(format!(
                "tensor `{fqn}`: its size is not a list of non-negative integers"
            )));
            continue;
        };
        let head = format!("tensor `{fqn}` (shape {})", dims(&shape));
        let chunks = match chunks(p, list) {
            Ok(chunks) => chunks,
            Err(i) => {
                out.push(bad(format!(
                    "{head}: chunk {i} has no readable offsets and sizes"
                )));
                continue;
            }
        };
        for problem in coverage_within(&shape, &chunks, &mut budget) {
            let message = format!("{head}: {}", describe(&shape, &chunks, &problem));
            out.push(match problem {
                Problem::TooManyChunks(_) | Problem::Unchecked => {
                    Finding::warning(FindingKind::BadLayout, path, message)
                }
                _ => bad(message),
            });
        }
        if storage.is_none() {
            continue;
        }
        if let Some(message) = missing_lookups(&stored, fqn, &chunks) {
            out.push(bad(format!("{head}: {message}")));
        }
    }
    out
}

/// The chunks listed at `list`; `Err` with the index of the first whose offsets and
/// sizes are not readable.
fn chunks(p: &Pickle, list: Id) -> Result<Vec<Chunk>, usize> {
    let items = p.items(list).unwrap_or(&[]);
    let mut chunks = Vec::with_capacity(items.len());
    for (i, &c) in items.iter().enumerate() {
        let offsets = p.get(c, "offsets").and_then(|o| ints(p, o));
        let sizes = p.get(c, "sizes").and_then(|s| ints(p, s));
        let (Some(offsets), Some(sizes)) = (offsets, sizes) else {
            return Err(i);
        };
        chunks.push(Chunk { offsets, sizes });
    }
    Ok(chunks)
}

/// The chunks of tensor `fqn` that `storage_data` (`stored`) has no entry for, in
/// words, if any.
fn missing_lookups<'a>(
    stored: &BTreeSet<(&'a str, Option<Vec<u64>>)>,
    fqn: &'a str,
    chunks: &[Chunk],
) -> Option<String> {
    let mut missing =
        (0..chunks.len()).filter(|&i| !stored.contains(&(fqn, Some(chunks[i].offsets.clone()))));
    let i = missing.next()?;
    let more = missing.count();
    let also = if more > 0 {
        format!(" and {more} more chunk(s) have")
    } else {
        " has".to_string()
    };
    Some(format!(
        "chunk {i} (offsets {}){also} no storage_data entry (dcp.load fails looking it up)",
        dims(&chunks[i].offsets)
    ))
}
