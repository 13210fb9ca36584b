//! Reading the item a chunk is stored in, and holding what it holds against what
//! `.metadata` declares for the chunk. Each item is read once (cached by file, offset
//! and length; a safetensors blob once per file).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::super::containers::{safetensors_at, torch_archive};
use super::super::model::{Encoded, Piece, Tensor};
use crate::Error;
use crate::dcp::meta::Item;
use crate::dcp::transform;
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
    /// Not read: the items before it already spanned twice the data files' bytes,
    /// which only overlapping items do (the layout check names the overlaps).
    Overlap,
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

/// What reading one safetensors blob gave (shared by every tensor item pointing there).
type BlobTensors = Result<Rc<Vec<Tensor>>, (Cause, Error)>;

/// What reading one stored item gave (shared by every chunk that points at it).
type ItemTensors = Result<Rc<Stored>, (Cause, Error)>;

/// What `.metadata` declares for a chunk.
pub(super) struct Chunk<'a> {
    /// Its index in the tensor's chunks.
    pub index: usize,
    /// Its extent in each dimension.
    pub sizes: &'a [u64],
    /// The tensor's dtype.
    pub dtype: TensorDtype,
    /// The `.metadata` declaring it (for errors).
    pub meta: &'a Path,
}

pub(super) struct Reader<'a> {
    dir: &'a Path,
    rel: &'a str,
    files: BTreeMap<String, DataFile>,
    /// Each stored item read, by (file, offset, length).
    read: BTreeMap<(String, u64, u64), ItemTensors>,
    /// Stored bytes the items still to be read may span.
    budget: u64,
    /// Each safetensors blob read, by (file, offset).
    blobs: BTreeMap<(String, u64), BlobTensors>,
}

impl<'a> Reader<'a> {
    /// A reader of the items of the checkpoint in `dir` (its `.metadata` shown as `rel`)
    /// that reads at most twice the bytes of the data files `items` name: a checkpoint's
    /// items do not overlap, so only a hostile `.metadata` (a million items over the same
    /// gigabyte) reaches that, and is not read further.
    pub(super) fn new(dir: &'a Path, rel: &'a str, items: &[&Item]) -> Self {
        let mut names: Vec<&str> = items.iter().map(|i| i.file.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let stored: u64 = names
            .iter()
            .filter_map(|n| std::fs::symlink_metadata(dir.join(n)).ok())
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len())
            .fold(0, u64::saturating_add);
        Self {
            dir,
            rel,
            files: BTreeMap::new(),
            read: BTreeMap::new(),
            blobs: BTreeMap::new(),
            budget: stored.saturating_mul(2),
        }
    }

    /// The piece `item` holds for `chunk`, held against what `.metadata` declares.
    pub(super) fn piece(
        &mut self,
        item: &Item,
        chunk: &Chunk<'_>,
    ) -> Result<Piece, (Cause, Error)> {
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
                Error::malformed(
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
            let narrowed = tensor.shape.len() == chunk.sizes.len()
                && tensor.shape.iter().zip(chunk.sizes).all(|(s, d)| s >= d);
            let effect = if narrowed {
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
    fn file(&mut self, name: &str, fqn: &str) -> Result<&DataFile, (Cause, Error)> {
        if !self.files.contains_key(name) {
            let plain =
                !name.is_empty() && !name.contains(['/', '\\']) && name != "." && name != "..";
            let meta = self.dir.join(".metadata");
            if !plain {
                return Err((
                    Cause::File,
                    Error::malformed(
                        &meta,
                        format!(
                            "tensor `{fqn}`: a chunk is stored in `{name}`, not a file beside .metadata"
                        ),
                    ),
                ));
            }
            let path = self.dir.join(name);
            let io = |e| (Cause::File, Error::io(&path, e));
            let regular = std::fs::symlink_metadata(&path).map_err(io)?;
            if !regular.is_file() {
                return Err((
                    Cause::File,
                    Error::malformed(&path, "is not a regular file"),
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
    fn read_item(&mut self, item: &Item) -> Result<Stored, (Cause, Error)> {
        let rel = self.rel.to_string();
        let data = self.file(&item.file, &item.fqn)?;
        let (path, size) = (data.path.clone(), data.size);
        let data_file = data
            .file
            .try_clone()
            .map_err(|e| (Cause::File, Error::io(&path, e)))?;
        self.claim(item, &path, size)?;
        if !item.transforms.is_empty() {
            return read_transformed(item, &path, &data_file, &rel);
        }
        let mut head = [0u8; 16];
        data_file
            .read_exact_at(&mut head, item.offset)
            .map_err(|e| (Cause::Container, Error::io(&path, e)))?;
        if head.starts_with(b"PK\x03\x04") {
            let mut file = data_file;
            let located = zip::locate(&mut file, item.end(), false);
            return match located.archives.first() {
                Some(a) if a.start == item.offset => torch_archive(&path, &mut file, a, &rel)
                    .map(Stored::Zip)
                    .map_err(with_cause),
                _ => Err(container(&path, item, "no complete torch zip there".into())),
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
            &path,
            item,
            "holds neither a torch zip nor safetensors".into(),
        ))
    }

    /// Checks that `item` lies inside its data file (`path`, `size` bytes) and takes its
    /// length from the read budget (only overlapping items read the same bytes twice).
    fn claim(&mut self, item: &Item, path: &Path, size: u64) -> Result<(), (Cause, Error)> {
        let label = item.label();
        if item
            .offset
            .checked_add(item.length)
            .is_none_or(|end| end > size)
        {
            return Err((
                Cause::PastEnd,
                Error::malformed(
                    path,
                    format!(
                        "{label} at bytes {}..+{} is past the end of the {}-byte file",
                        item.offset, item.length, size
                    ),
                ),
            ));
        }
        match self.budget.checked_sub(item.length) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err((
                Cause::Overlap,
                Error::malformed(
                    path,
                    format!(
                        "{label} was not read: the items read before it already span twice the bytes of the data files (overlapping items)"
                    ),
                ),
            )),
        }
    }
}

/// The container problem of `item` in the data file at `path`, in words.
fn container(path: &Path, item: &Item, why: String) -> (Cause, Error) {
    (
        Cause::Container,
        Error::malformed(
            path,
            format!(
                "{} at bytes {}..{}: {why}",
                item.label(),
                item.offset,
                item.end()
            ),
        ),
    )
}

/// The tensors of an item stored through transforms (a zstd frame decoding to a torch
/// zip): decoded, then read as a zip, each piece remembering how to decode it again.
fn read_transformed(
    item: &Item,
    path: &Path,
    data_file: &File,
    rel: &str,
) -> Result<Stored, (Cause, Error)> {
    let label = item.label();
    let transforms = transform::parse(&item.transforms).map_err(|d| {
        (
            Cause::Transform,
            Error::Unsupported {
                path: path.display().to_string(),
                reason: format!(
                    "{label} is stored through transform `{d}`, which shardsmith does not read"
                ),
            },
        )
    })?;
    let decoded =
        transform::decode_at(data_file, item.offset, item.length, &transforms, item.limit)
            .map_err(|e| {
                let cause = match e {
                    transform::DecodeError::TooLarge { .. } => Cause::Transform,
                    _ => Cause::Container,
                };
                (cause, container(path, item, e.to_string()).1)
            })?;
    let mut file = decoded.file;
    let located = zip::locate(&mut file, decoded.len, false);
    let archive = match (located.archives.first(), located.damage) {
        (Some(a), None) => a.clone(),
        (_, Some(d)) => {
            return Err(container(
                path,
                item,
                format!("its decoded bytes: {}", d.message),
            ));
        }
        (None, None) => {
            return Err(container(
                path,
                item,
                "its decoded bytes hold no zip".into(),
            ));
        }
    };
    let mut tensors = torch_archive(path, &mut file, &archive, rel).map_err(with_cause)?;
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
    Ok(Stored::Zip(tensors))
}

/// A reading error as a problem: what this reader does not read, or damage.
fn with_cause(e: Error) -> (Cause, Error) {
    match e {
        Error::Unsupported { .. } => (Cause::Unsupported, e),
        _ => (Cause::Container, e),
    }
}

fn clone_error(e: &Error) -> Error {
    match e {
        Error::Io { path, source } => Error::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Malformed { path, reason } => Error::Malformed {
            path: path.clone(),
            reason: reason.clone(),
        },
        Error::Unsupported { path, reason } => Error::Unsupported {
            path: path.clone(),
            reason: reason.clone(),
        },
        Error::Unreadable { path, source } => Error::Unreadable {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Rule(e) => Error::Rule(e.clone()),
    }
}
