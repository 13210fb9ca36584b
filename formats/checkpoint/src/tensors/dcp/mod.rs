//! The tensors of a PyTorch DCP checkpoint: `.metadata` gives each tensor's global
//! shape, dtype and chunks, and where each chunk is stored (`storage_data`: a data
//! file, an offset and a length, and the transforms its bytes went through). A chunk
//! saved with the default `TORCH_SAVE` format is a complete torch zip at that offset
//! (with the ZStandard extension, a zstd frame decoding to one); saved with
//! `serialization_format=SAFETENSORS` it is a tensor of a safetensors blob there.
//!
//! [`resolve`] holds every chunk against the data stored for it, as `dcp.load` does
//! (one stored tensor, of the chunk's shape, and of the dtype `.metadata` declares,
//! which a load into a state dict built from it, as `dcp_to_torch_save` does, gives).
//! It is the one check of `.metadata` against the data: `diff` and `ls` stop at its
//! first problem ([`directory`]), `verify` reports every one ([`check`]).

mod read;

use std::collections::BTreeMap;
use std::path::Path;

use shardsmith_manifest::{Finding, FindingKind};

pub(crate) use self::read::Cause;
use self::read::{Chunk, Reader};
use super::model::Tensor;
use crate::Error;
use crate::dcp::meta::{self, Item};
use crate::dcp_coverage::ints;
use crate::pickle::{self, Node, Pickle};
use crate::pickle_inspector::MAX_PICKLE_FILE;
use crate::values::TensorDtype;

/// A chunk that cannot be read as `.metadata` declares it.
#[derive(Debug)]
pub(crate) struct Problem {
    pub cause: Cause,
    /// The data file, as `.metadata` records it (relative to the checkpoint directory).
    pub file: Option<String>,
    /// The chunk's stored bytes.
    pub range: Option<(u64, u64)>,
    /// What `diff` and `ls` report.
    pub error: Error,
}

/// Most chunks `verify` names for one `.metadata`; the rest are counted in one more
/// finding.
const MAX_NAMED: usize = 100;

/// The tensors of the DCP checkpoint in `dir` (its `.metadata` shown as `rel`), or the
/// first chunk that cannot be read as `.metadata` declares it.
pub(super) fn directory(dir: &Path, rel: &str) -> Result<Vec<Tensor>, Error> {
    let (tensors, problems) = resolve(dir, rel)?;
    match problems.into_iter().next() {
        Some(p) => Err(p.error),
        None => Ok(tensors),
    }
}

/// The tensors of the DCP checkpoint in `dir` whose every chunk reads as `.metadata`
/// declares it, and the problems of the others (every chunk tried); an error only when
/// `.metadata` itself cannot be read.
pub(crate) fn resolve(dir: &Path, rel: &str) -> Result<(Vec<Tensor>, Vec<Problem>), Error> {
    let meta = dir.join(".metadata");
    let size = std::fs::metadata(&meta)
        .map_err(|e| Error::io(&meta, e))?
        .len();
    if size > MAX_PICKLE_FILE {
        return Err(Error::malformed(
            &meta,
            format!("{size} bytes is too large"),
        ));
    }
    let bytes = std::fs::read(&meta).map_err(|e| Error::io(&meta, e))?;
    let p = pickle::parse(&bytes)
        .map_err(|e| Error::malformed(&meta, format!("not a readable pickle: {e:?}")))?;
    let tensors = p
        .get(p.root, "state_dict_metadata")
        .ok_or_else(|| Error::malformed(&meta, "no state_dict_metadata"))?;
    let storage: BTreeMap<(String, Vec<u64>), Item> = meta::items(&p)
        .into_iter()
        .filter_map(|i| Some(((i.fqn.clone(), i.chunk.clone()?), i)))
        .collect();
    let mut reader = Reader::new(dir, rel, &storage.values().collect::<Vec<_>>());
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for &(k, v) in p.dict_entries(tensors).unwrap_or(&[]) {
        let fqn = p.str(k).unwrap_or("?").to_string();
        let Some(list) = p.get(v, "chunks") else {
            continue; // a bytes item (BytesStorageMetadata), not a tensor
        };
        let bad = |why: String| Error::malformed(&meta, format!("tensor `{fqn}`: {why}"));
        let declared = |cause, why: &str| Problem {
            cause,
            file: None,
            range: None,
            error: bad(why.into()),
        };
        let Some(shape) = p.get(v, "size").and_then(|s| ints(&p, s)) else {
            problems.push(declared(
                Cause::Coverage,
                "its size is not a list of non-negative integers",
            ));
            continue;
        };
        let Some(dtype) = p
            .get(v, "properties")
            .and_then(|props| properties_dtype(&p, props))
            .and_then(|d| p.global_name(d))
            .and_then(|n| TensorDtype::from_torch_dtype(n.trim_start_matches("torch.")))
        else {
            problems.push(declared(
                Cause::Unsupported,
                "its dtype is not one shardsmith reads",
            ));
            continue;
        };
        let mut pieces = Vec::new();
        let before = problems.len();
        for (i, &c) in p.items(list).unwrap_or(&[]).iter().enumerate() {
            let offsets = p.get(c, "offsets").and_then(|o| ints(&p, o));
            let sizes = p.get(c, "sizes").and_then(|s| ints(&p, s));
            let (Some(offsets), Some(sizes)) = (offsets, sizes) else {
                problems.push(declared(
                    Cause::Coverage,
                    &format!("chunk {i} has no readable offsets and sizes"),
                ));
                continue;
            };
            let Some(item) = storage.get(&(fqn.clone(), offsets.clone())) else {
                problems.push(Problem {
                    cause: Cause::Coverage,
                    file: None,
                    range: None,
                    error: bad(format!(
                        "chunk {i} (offsets {offsets:?}) has no storage_data entry"
                    )),
                });
                continue;
            };
            let chunk = Chunk {
                index: i,
                sizes: &sizes,
                dtype,
                meta: &meta,
            };
            match reader.piece(item, &chunk) {
                Ok(mut piece) => {
                    piece.at = offsets;
                    pieces.push(piece);
                }
                Err((cause, error)) => problems.push(Problem {
                    cause,
                    file: Some(item.file.clone()),
                    range: Some((item.offset, item.end())),
                    error,
                }),
            }
        }
        if problems.len() == before {
            out.push(Tensor {
                name: fqn,
                dtype,
                shape,
                pieces,
                file: rel.to_string(),
            });
        }
    }
    Ok((out, problems))
}

/// The findings of `verify` for the DCP checkpoint whose `.metadata` is `meta_rel`
/// (under `root`): every chunk whose stored data disagrees with `.metadata`, and those
/// that cannot be read where no other check reports why (`damaged` says which data
/// files, by path relative to `root`, already have an error).
pub(crate) fn check(root: &Path, meta_rel: &str, damaged: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let dir = meta_rel.rsplit_once('/').map_or("", |(d, _)| d);
    let at = |file: &str| match dir {
        "" => file.to_string(),
        _ => format!("{dir}/{file}"),
    };
    let Ok((_, problems)) = resolve(&root.join(dir), meta_rel) else {
        return Vec::new(); // an unreadable .metadata is its own finding
    };
    let mut out = Vec::new();
    for p in problems {
        let file = p.file.as_deref().map(at);
        let reason = match &p.error {
            Error::Io { source, .. } | Error::Unreadable { source, .. } => source.to_string(),
            Error::Rule(e) => e.to_string(),
            Error::Malformed { reason, .. } | Error::Unsupported { reason, .. } => reason.clone(),
        };
        let finding = match p.cause {
            Cause::Coverage | Cause::File | Cause::PastEnd | Cause::Transform | Cause::Overlap => {
                continue;
            }
            Cause::Container if file.as_deref().is_some_and(damaged) => continue,
            Cause::Container | Cause::Mismatch => {
                Finding::error(FindingKind::BadTensor, meta_rel, reason)
            }
            Cause::Unsupported => Finding::warning(
                FindingKind::UnsupportedDtype,
                meta_rel,
                format!("{reason}: its chunks were not held against their data"),
            ),
        };
        out.push(match p.range {
            Some((start, end)) => Finding {
                path: file.unwrap_or_else(|| meta_rel.to_string()),
                ..finding.range(start, end)
            },
            None => finding,
        });
    }
    if out.len() > MAX_NAMED {
        let more = out.len() - MAX_NAMED;
        let errors = out[MAX_NAMED..].iter().any(Finding::is_error);
        out.truncate(MAX_NAMED);
        let message = format!(
            "{more} more chunk(s) disagree with the data stored for them or were not read (the first {MAX_NAMED} are named)"
        );
        out.push(if errors {
            Finding::error(FindingKind::BadTensor, meta_rel, message)
        } else {
            Finding::warning(FindingKind::UnsupportedDtype, meta_rel, message)
        });
    }
    out
}

/// The dtype of a `TensorProperties`: the first item of the tuple its `__getstate__`
/// returns (torch 2.x), or its `dtype` field.
fn properties_dtype(p: &Pickle, props: usize) -> Option<usize> {
    if let Node::Object {
        state: Some(state), ..
    } = p.node(props)
        && let Some(items) = p.items(*state)
    {
        return items.first().copied();
    }
    p.get(props, "dtype")
}

#[cfg(test)]
mod tests;
