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

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use shardsmith_manifest::{Finding, FindingKind};

use super::containers::{safetensors_at, torch_archive};
use super::model::{Encoded, Piece, Tensor, TensorError};
use crate::dcp::meta::{self, Item};
use crate::dcp::transform;
use crate::dcp_coverage::ints;
use crate::pickle::{self, Node, Pickle};
use crate::pickled::MAX_PICKLE_FILE;
use crate::safetensors::is_safetensors;
use crate::values::TensorDtype;
use crate::zip;

/// What kind of problem a chunk has, so that `verify` tells apart what another of its
/// checks already reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// `.metadata` contradicts itself about it: no readable offsets and sizes, no
    /// storage record (the coverage check names it).
    Coverage,
    /// Its data file is missing, outside the directory or not a regular file (the
    /// layout check names it).
    File,
    /// Its bytes lie past the end of its file (the layout check names it).
    PastEnd,
    /// Its bytes are not a readable zip, blob or transformed stream (the data file's
    /// inspector names the damage).
    Container,
    /// The stored data disagrees with `.metadata`: another shape, another dtype, not
    /// one tensor.
    Mismatch,
    /// Something this reader does not read (a dtype, a tensor layout).
    Unsupported,
    /// Stored through a transform this reader does not read, or decoding to more than
    /// `.metadata` allows (the data file's inspector names it).
    Transform,
}

/// A chunk that cannot be read as `.metadata` declares it.
#[derive(Debug)]
pub(crate) struct Problem {
    pub cause: Cause,
    /// The data file, as `.metadata` records it (relative to the checkpoint directory).
    pub file: Option<String>,
    /// The chunk's stored bytes.
    pub range: Option<(u64, u64)>,
    pub error: TensorError,
}

/// A data file, opened once.
struct DataFile {
    path: PathBuf,
    file: File,
    size: u64,
}

/// What one stored item holds: the tensors of its torch zip, or of the safetensors
/// blob it points at (every tensor item of a safetensors-format file points there).
enum Stored {
    Zip(Vec<Tensor>),
    Blob(Rc<Vec<Tensor>>),
}

/// What reading one stored item gave (shared by every chunk that points at it).
type ItemTensors = Result<Rc<Stored>, (Cause, TensorError)>;

/// The tensors of the DCP checkpoint in `dir` (its `.metadata` shown as `rel`), or the
/// first chunk that cannot be read as `.metadata` declares it.
pub(super) fn directory(dir: &Path, rel: &str) -> Result<Vec<Tensor>, TensorError> {
    let (tensors, problems) = resolve(dir, rel)?;
    match problems.into_iter().next() {
        Some(p) => Err(p.error),
        None => Ok(tensors),
    }
}

/// The tensors of the DCP checkpoint in `dir` whose every chunk reads as `.metadata`
/// declares it, and the problems of the others (every chunk tried); an error only when
/// `.metadata` itself cannot be read.
pub(crate) fn resolve(dir: &Path, rel: &str) -> Result<(Vec<Tensor>, Vec<Problem>), TensorError> {
    let meta = dir.join(".metadata");
    let size = std::fs::metadata(&meta)
        .map_err(|e| TensorError::io(&meta, e))?
        .len();
    if size > MAX_PICKLE_FILE {
        return Err(TensorError::malformed(
            &meta,
            format!("{size} bytes is too large"),
        ));
    }
    let bytes = std::fs::read(&meta).map_err(|e| TensorError::io(&meta, e))?;
    let p = pickle::parse(&bytes)
        .map_err(|e| TensorError::malformed(&meta, format!("not a readable pickle: {e:?}")))?;
    let tensors = p
        .get(p.root, "state_dict_metadata")
        .ok_or_else(|| TensorError::malformed(&meta, "no state_dict_metadata"))?;
    let mut reader = Reader {
        dir,
        rel,
        files: BTreeMap::new(),
        read: BTreeMap::new(),
        blobs: BTreeMap::new(),
    };
    let storage: BTreeMap<(String, Vec<u64>), Item> = meta::items(&p)
        .into_iter()
        .filter_map(|i| Some(((i.fqn.clone(), i.chunk.clone()?), i)))
        .collect();
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for &(k, v) in p.dict_entries(tensors).unwrap_or(&[]) {
        let fqn = p.str(k).unwrap_or("?").to_string();
        let Some(list) = p.get(v, "chunks") else {
            continue; // a bytes item (BytesStorageMetadata), not a tensor
        };
        let bad = |why: String| TensorError::malformed(&meta, format!("tensor `{fqn}`: {why}"));
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
            TensorError::Io { source, .. } => source.to_string(),
            TensorError::Malformed { reason, .. } | TensorError::Unsupported { reason, .. } => {
                reason.clone()
            }
        };
        let finding = match p.cause {
            Cause::Coverage | Cause::File | Cause::PastEnd | Cause::Transform => continue,
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
    out
}

/// What `.metadata` declares for a chunk.
struct Chunk<'a> {
    index: usize,
    sizes: &'a [u64],
    dtype: TensorDtype,
    meta: &'a Path,
}

struct Reader<'a> {
    dir: &'a Path,
    rel: &'a str,
    files: BTreeMap<String, DataFile>,
    /// Each stored item read, by (file, offset, length).
    read: BTreeMap<(String, u64, u64), ItemTensors>,
    /// Each safetensors blob read, by (file, offset).
    blobs: BTreeMap<(String, u64), Result<Rc<Vec<Tensor>>, (Cause, TensorError)>>,
}

impl Reader<'_> {
    /// The piece `item` holds for `chunk`, held against what `.metadata` declares.
    fn piece(&mut self, item: &Item, chunk: &Chunk<'_>) -> Result<Piece, (Cause, TensorError)> {
        let key = (item.file.clone(), item.offset, item.length);
        if !self.read.contains_key(&key) {
            let got = self.read_item(item).map(Rc::new);
            self.read.insert(key.clone(), got);
        }
        let tensors = match &self.read[&key] {
            Ok(t) => Rc::clone(t),
            Err((cause, e)) => return Err((*cause, clone_error(e))),
        };
        let fqn = &item.fqn;
        let i = chunk.index;
        let at = format!("bytes {}..{} of {}", item.offset, item.end(), item.file);
        let found: Vec<&Tensor> = match &*tensors {
            // A safetensors blob: the chunk is the tensor of its name.
            Stored::Blob(all) => all.iter().filter(|t| &t.name == fqn).collect(),
            Stored::Zip(all) => all.iter().collect(),
        };
        let mismatch = |why: String| {
            (
                Cause::Mismatch,
                TensorError::malformed(
                    chunk.meta,
                    format!("tensor `{fqn}`: chunk {i} ({at}) {why}"),
                ),
            )
        };
        let [tensor] = found[..] else {
            return Err(mismatch(format!(
                "holds {} tensors, not the one chunk of `{fqn}`",
                found.len()
            )));
        };
        if tensor.dtype != chunk.dtype {
            return Err(mismatch(format!(
                "is stored as {}, but .metadata declares {}: a load into a state dict built from .metadata (dcp_to_torch_save) gives {} values",
                tensor.dtype_name(),
                chunk.dtype.safetensors_name(),
                chunk.dtype.safetensors_name()
            )));
        }
        if tensor.shape != chunk.sizes {
            let smaller = tensor.shape.len() == chunk.sizes.len()
                && tensor.shape.iter().zip(chunk.sizes).all(|(s, d)| s >= d);
            let effect = if smaller {
                "dcp.load takes part of it (torch narrows it to the chunk) and may load the wrong elements silently"
            } else {
                "dcp.load fails on it (\"mismatch sizes\")"
            };
            return Err(mismatch(format!(
                "is stored with shape {:?}, but .metadata declares {:?}: {effect}",
                tensor.shape, chunk.sizes
            )));
        }
        Ok(tensor.pieces[0].clone())
    }

    /// The data file `name`, opened once (a plain name beside `.metadata`: never an
    /// absolute path, a `..`, or anything but a regular file, since a FIFO would block).
    fn file(&mut self, name: &str, fqn: &str) -> Result<&DataFile, (Cause, TensorError)> {
        if !self.files.contains_key(name) {
            let plain =
                !name.is_empty() && !name.contains(['/', '\\']) && name != "." && name != "..";
            let meta = self.dir.join(".metadata");
            if !plain {
                return Err((
                    Cause::File,
                    TensorError::malformed(
                        &meta,
                        format!(
                            "tensor `{fqn}`: a chunk is stored in `{name}`, not a file beside .metadata"
                        ),
                    ),
                ));
            }
            let path = self.dir.join(name);
            let io = |e| (Cause::File, TensorError::io(&path, e));
            let regular = std::fs::symlink_metadata(&path).map_err(io)?;
            if !regular.is_file() {
                return Err((
                    Cause::File,
                    TensorError::malformed(&path, "is not a regular file"),
                ));
            }
            let file = File::open(&path).map_err(io)?;
            let size = file.metadata().map_err(io)?.len();
            self.files
                .insert(name.to_string(), DataFile { path, file, size });
        }
        Ok(&self.files[name])
    }

    /// The tensors the stored item holds (one for a torch zip, every tensor of a
    /// safetensors blob).
    fn read_item(&mut self, item: &Item) -> Result<Stored, (Cause, TensorError)> {
        let rel = self.rel.to_string();
        let data = self.file(&item.file, &item.fqn)?;
        let (path, size) = (data.path.clone(), data.size);
        let data_file = data
            .file
            .try_clone()
            .map_err(|e| (Cause::File, TensorError::io(&path, e)))?;
        let label = item.label();
        let container = |why: String| {
            (
                Cause::Container,
                TensorError::malformed(
                    &path,
                    format!("{label} at bytes {}..{}: {why}", item.offset, item.end()),
                ),
            )
        };
        if item
            .offset
            .checked_add(item.length)
            .is_none_or(|end| end > size)
        {
            return Err((
                Cause::PastEnd,
                TensorError::malformed(
                    &path,
                    format!(
                        "{label} at bytes {}..+{} is past the end of the {}-byte file",
                        item.offset, item.length, size
                    ),
                ),
            ));
        }
        if !item.transforms.is_empty() {
            let transforms = transform::parse(&item.transforms).map_err(|d| {
                (
                    Cause::Transform,
                    TensorError::Unsupported {
                        path: path.display().to_string(),
                        reason: format!("{label} is stored through transform `{d}`, which shardsmith does not read"),
                    },
                )
            })?;
            let decoded = transform::decode_at(
                &data_file,
                item.offset,
                item.length,
                &transforms,
                item.limit,
            )
            .map_err(|e| {
                let cause = match e {
                    transform::DecodeError::TooLarge { .. } => Cause::Transform,
                    _ => Cause::Container,
                };
                (cause, container(e.to_string()).1)
            })?;
            let mut file = decoded.file;
            let located = zip::locate(&mut file, decoded.len, false);
            let archive = match (located.archives.first(), located.damage) {
                (Some(a), None) => a.clone(),
                (_, Some(d)) => return Err(container(format!("its decoded bytes: {}", d.message))),
                (None, None) => return Err(container("its decoded bytes hold no zip".into())),
            };
            let mut tensors =
                torch_archive(&path, &mut file, &archive, &rel).map_err(|e| with_cause(e))?;
            for t in &mut tensors {
                for piece in &mut t.pieces {
                    piece.encoded = Some(Encoded {
                        offset: item.offset,
                        length: item.length,
                        transforms: transforms.clone(),
                        limit: item.limit,
                    });
                }
            }
            return Ok(Stored::Zip(tensors));
        }
        let mut head = [0u8; 16];
        data_file
            .read_exact_at(&mut head, item.offset)
            .map_err(|e| (Cause::Container, TensorError::io(&path, e)))?;
        if head.starts_with(b"PK\x03\x04") {
            let mut file = data_file;
            let located = zip::locate(&mut file, item.end(), false);
            return match located.archives.first() {
                Some(a) if a.start == item.offset => torch_archive(&path, &mut file, a, &rel)
                    .map(Stored::Zip)
                    .map_err(with_cause),
                _ => Err(container("no complete torch zip there".into())),
            };
        }
        if is_safetensors(&head, size - item.offset) {
            // With `serialization_format=SAFETENSORS` every tensor item of the file
            // points at the start of the one blob (its length is the tensor's): the
            // tensor is found by name in the blob's header.
            let key = (item.file.clone(), item.offset);
            if !self.blobs.contains_key(&key) {
                let mut file = data_file;
                let read = safetensors_at(&path, &mut file, item.offset, size - item.offset, &rel);
                self.blobs
                    .insert(key.clone(), read.map(Rc::new).map_err(with_cause));
            }
            let blob = match &self.blobs[&key] {
                Ok(blob) => Rc::clone(blob),
                Err((cause, e)) => return Err((*cause, clone_error(e))),
            };
            return Ok(Stored::Blob(blob));
        }
        Err(container(
            "holds neither a torch zip nor safetensors".into(),
        ))
    }
}

/// A reading error as a problem: what this reader does not read, or damage.
fn with_cause(e: TensorError) -> (Cause, TensorError) {
    match e {
        TensorError::Unsupported { .. } => (Cause::Unsupported, e),
        _ => (Cause::Container, e),
    }
}

fn clone_error(e: &TensorError) -> TensorError {
    match e {
        TensorError::Io { path, source } => TensorError::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        TensorError::Malformed { path, reason } => TensorError::Malformed {
            path: path.clone(),
            reason: reason.clone(),
        },
        TensorError::Unsupported { path, reason } => TensorError::Unsupported {
            path: path.clone(),
            reason: reason.clone(),
        },
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
