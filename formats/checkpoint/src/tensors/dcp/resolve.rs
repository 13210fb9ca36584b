//! Every chunk of a DCP checkpoint's tensors held against the data stored for it.

use std::collections::BTreeMap;
use std::path::Path;

use super::read::{Cause, Chunk, Reader};
use crate::Error;
use crate::dcp::meta::{self, Item};
use crate::dcp_coverage::ints;
use crate::pickle::{self, Id, Node, Pickle};
use crate::pickle_inspector::MAX_PICKLE_FILE;
use crate::tensors::model::{Piece, Tensor};
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

/// The tensors of the DCP checkpoint in `dir` (its `.metadata` shown as `rel`), or the
/// first chunk that cannot be read as `.metadata` declares it.
pub(crate) fn directory(dir: &Path, rel: &str) -> Result<Vec<Tensor>, Error> {
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
    let p = read_metadata(&meta)?;
    let tensors = p
        .get(p.root, "state_dict_metadata")
        .ok_or_else(|| Error::malformed(&meta, "no state_dict_metadata"))?;
    let storage: BTreeMap<(String, Vec<u64>), Item> = meta::items(&p)
        .into_iter()
        .filter_map(|i| Some(((i.fqn.clone(), i.chunk.clone()?), i)))
        .collect();
    let mut resolver = Resolver {
        p: &p,
        meta: &meta,
        rel,
        storage: &storage,
        reader: Reader::new(dir, rel, &storage.values().collect::<Vec<_>>()),
        problems: Vec::new(),
    };
    let mut out = Vec::new();
    for &(k, v) in p.dict_entries(tensors).unwrap_or(&[]) {
        if let Some(tensor) = resolver.tensor(k, v) {
            out.push(tensor);
        }
    }
    Ok((out, resolver.problems))
}

/// The `.metadata` at `meta`, parsed (bounded in size).
fn read_metadata(meta: &Path) -> Result<Pickle, Error> {
    let size = std::fs::metadata(meta)
        .map_err(|e| Error::io(meta, e))?
        .len();
    if size > MAX_PICKLE_FILE {
        return Err(Error::malformed(meta, format!("{size} bytes is too large")));
    }
    let bytes = std::fs::read(meta).map_err(|e| Error::io(meta, e))?;
    pickle::parse(&bytes)
        .map_err(|e| Error::malformed(meta, format!("not a readable pickle: {e:?}")))
}

/// Holds the tensors of one `.metadata` against their stored chunks, gathering the
/// problems.
struct Resolver<'a> {
    p: &'a Pickle,
    /// The `.metadata` file, as errors name it.
    meta: &'a Path,
    /// The `.metadata` as the caller shows it.
    rel: &'a str,
    /// The `storage_data` items of the chunks, by (fqn, chunk offsets).
    storage: &'a BTreeMap<(String, Vec<u64>), Item>,
    reader: Reader<'a>,
    problems: Vec<Problem>,
}

impl Resolver<'_> {
    /// The tensor of the `state_dict_metadata` entry `k: v` when every chunk of it reads
    /// as declared; `None` for a bytes item or a tensor with problems (recorded).
    fn tensor(&mut self, k: Id, v: Id) -> Option<Tensor> {
        let p = self.p;
        let fqn = p.str(k).unwrap_or("?").to_string();
        let list = p.get(v, "chunks")?; // else a bytes item (BytesStorageMetadata)
        let Some(shape) = p.get(v, "size").and_then(|s| ints(p, s)) else {
            self.declared(
                &fqn,
                Cause::Coverage,
                "its size is not a list of non-negative integers",
            );
            return None;
        };
        let Some(dtype) = p
            .get(v, "properties")
            .and_then(|props| properties_dtype(p, props))
            .and_then(|d| p.global_name(d))
            .and_then(|n| TensorDtype::from_torch_dtype(n.trim_start_matches("torch.")))
        else {
            self.declared(
                &fqn,
                Cause::Unsupported,
                "its dtype is not one shardsmith reads",
            );
            return None;
        };
        let mut pieces = Vec::new();
        let before = self.problems.len();
        for (i, &c) in p.items(list).unwrap_or(&[]).iter().enumerate() {
            if let Some(piece) = self.piece(&fqn, dtype, i, c) {
                pieces.push(piece);
            }
        }
        (self.problems.len() == before).then(|| Tensor {
            name: fqn,
            dtype,
            shape,
            pieces,
            file: self.rel.to_string(),
        })
    }

    /// Chunk `i` (node `c`) of tensor `fqn`, read from the data stored for it.
    fn piece(&mut self, fqn: &str, dtype: TensorDtype, i: usize, c: Id) -> Option<Piece> {
        let p = self.p;
        let offsets = p.get(c, "offsets").and_then(|o| ints(p, o));
        let sizes = p.get(c, "sizes").and_then(|s| ints(p, s));
        let (Some(offsets), Some(sizes)) = (offsets, sizes) else {
            self.declared(
                fqn,
                Cause::Coverage,
                &format!("chunk {i} has no readable offsets and sizes"),
            );
            return None;
        };
        let Some(item) = self.storage.get(&(fqn.to_string(), offsets.clone())) else {
            self.declared(
                fqn,
                Cause::Coverage,
                &format!("chunk {i} (offsets {offsets:?}) has no storage_data entry"),
            );
            return None;
        };
        let chunk = Chunk {
            index: i,
            sizes: &sizes,
            dtype,
            meta: self.meta,
        };
        match self.reader.piece(item, &chunk) {
            Ok(mut piece) => {
                piece.at = offsets;
                Some(piece)
            }
            Err((cause, error)) => {
                self.problems.push(Problem {
                    cause,
                    file: Some(item.file.clone()),
                    range: Some((item.offset, item.end())),
                    error,
                });
                None
            }
        }
    }

    /// A problem of what `.metadata` declares for tensor `fqn` (no stored bytes).
    fn declared(&mut self, fqn: &str, cause: Cause, why: &str) {
        self.problems.push(Problem {
            cause,
            file: None,
            range: None,
            error: Error::malformed(self.meta, format!("tensor `{fqn}`: {why}")),
        });
    }
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
