//! The tensors of a PyTorch DCP checkpoint: `.metadata` gives each tensor's global
//! shape, dtype and chunks, and where each chunk is stored (`storage_data`: a data
//! file, an offset and a length). A chunk saved with the default `TORCH_SAVE` format is
//! a complete torch zip at that offset; saved with `serialization_format=SAFETENSORS`
//! it is a tensor of a safetensors blob there.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::containers::{safetensors_at, torch_archive};
use super::model::{Piece, Tensor, TensorError};
use crate::dcp_coverage::ints;
use crate::pickle::{self, Node, Pickle};
use crate::pickled::MAX_PICKLE_FILE;
use crate::safetensors::is_safetensors;
use crate::values::TensorDtype;
use crate::zip::{self, Located};

/// Where one chunk is stored.
struct Stored {
    file: String,
    offset: u64,
    length: u64,
}

/// A data file, opened once, its archives located once.
struct DataFile {
    path: PathBuf,
    file: File,
    size: u64,
    located: Option<Located>,
}

/// The tensors of the DCP checkpoint in `dir` (its `.metadata` shown as `rel`).
pub(super) fn directory(dir: &Path, rel: &str) -> Result<Vec<Tensor>, TensorError> {
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
    let storage = storage(&p);
    let tensors = p
        .get(p.root, "state_dict_metadata")
        .ok_or_else(|| TensorError::malformed(&meta, "no state_dict_metadata"))?;
    let mut files: BTreeMap<String, DataFile> = BTreeMap::new();
    let mut out = Vec::new();
    for &(k, v) in p.dict_entries(tensors).unwrap_or(&[]) {
        let fqn = p.str(k).unwrap_or("?").to_string();
        let Some(list) = p.get(v, "chunks") else {
            continue; // a bytes item (BytesStorageMetadata), not a tensor
        };
        let bad = |why: String| TensorError::malformed(&meta, format!("tensor `{fqn}`: {why}"));
        let shape = p
            .get(v, "size")
            .and_then(|s| ints(&p, s))
            .ok_or_else(|| bad("its size is not a list of non-negative integers".into()))?;
        let dtype = p
            .get(v, "properties")
            .and_then(|props| properties_dtype(&p, props))
            .and_then(|d| p.global_name(d))
            .and_then(|n| TensorDtype::from_torch_dtype(n.trim_start_matches("torch.")))
            .ok_or_else(|| bad("its dtype is not one shardsmith reads".into()))?;
        let mut pieces = Vec::new();
        for (i, &c) in p.items(list).unwrap_or(&[]).iter().enumerate() {
            let offsets = p.get(c, "offsets").and_then(|o| ints(&p, o));
            let sizes = p.get(c, "sizes").and_then(|s| ints(&p, s));
            let (Some(offsets), Some(sizes)) = (offsets, sizes) else {
                return Err(bad(format!("chunk {i} has no readable offsets and sizes")));
            };
            let stored = storage
                .get(&(fqn.clone(), offsets.clone()))
                .ok_or_else(|| {
                    bad(format!(
                        "chunk {i} (offsets {offsets:?}) has no storage_data entry"
                    ))
                })?;
            let data = match files.entry(stored.file.clone()) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(slot) => {
                    // A data file is a plain name beside `.metadata`: never an absolute
                    // path, a `..`, or anything but a regular file (a FIFO would block).
                    let plain = !stored.file.is_empty()
                        && !stored.file.contains(['/', '\\'])
                        && stored.file != "."
                        && stored.file != "..";
                    if !plain {
                        return Err(bad(format!(
                            "chunk {i} is stored in `{}`, not a file beside .metadata",
                            stored.file
                        )));
                    }
                    let path = dir.join(&stored.file);
                    let regular =
                        std::fs::symlink_metadata(&path).map_err(|e| TensorError::io(&path, e))?;
                    if !regular.is_file() {
                        return Err(TensorError::malformed(&path, "is not a regular file"));
                    }
                    let file = File::open(&path).map_err(|e| TensorError::io(&path, e))?;
                    let size = file
                        .metadata()
                        .map_err(|e| TensorError::io(&path, e))?
                        .len();
                    slot.insert(DataFile {
                        path,
                        file,
                        size,
                        located: None,
                    })
                }
            };
            let mut piece = chunk(data, stored, &fqn, dtype)?;
            if piece.shape != sizes {
                return Err(bad(format!(
                    "chunk {i} is stored with shape {:?}, .metadata says {sizes:?}",
                    piece.shape
                )));
            }
            piece.at = offsets;
            pieces.push(piece);
        }
        out.push(Tensor {
            name: fqn,
            dtype,
            shape,
            pieces,
            file: rel.to_string(),
        });
    }
    Ok(out)
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

/// `storage_data`: (fqn, chunk offsets) → where the chunk is stored.
fn storage(p: &Pickle) -> BTreeMap<(String, Vec<u64>), Stored> {
    let mut out = BTreeMap::new();
    let Some(storage) = p.get(p.root, "storage_data") else {
        return out;
    };
    for &(k, v) in p.dict_entries(storage).unwrap_or(&[]) {
        let fqn = p.get(k, "fqn").and_then(|id| p.str(id));
        let offsets = p
            .get(k, "offset")
            .and_then(|o| ints(p, o))
            .unwrap_or_default();
        let file = p.get(v, "relative_path").and_then(|id| p.str(id));
        let offset = p.get(v, "offset").and_then(|id| p.int(id));
        let length = p.get(v, "length").and_then(|id| p.int(id));
        if let (Some(fqn), Some(file), Some(offset), Some(length)) = (fqn, file, offset, length)
            && let (Ok(offset), Ok(length)) = (u64::try_from(offset), u64::try_from(length))
        {
            out.insert(
                (fqn.to_string(), offsets),
                Stored {
                    file: file.to_string(),
                    offset,
                    length,
                },
            );
        }
    }
    out
}

/// The one piece the chunk stored at `stored` in `data` holds.
fn chunk(
    data: &mut DataFile,
    stored: &Stored,
    fqn: &str,
    dtype: TensorDtype,
) -> Result<Piece, TensorError> {
    let path = data.path.clone();
    let end = stored.offset.checked_add(stored.length);
    if end.is_none_or(|end| end > data.size) {
        return Err(TensorError::malformed(
            &path,
            format!(
                "chunk of `{fqn}` at bytes {}..+{} is past the end of the {}-byte file",
                stored.offset, stored.length, data.size
            ),
        ));
    }
    let mut head = [0u8; 16];
    data.file
        .seek(SeekFrom::Start(stored.offset))
        .and_then(|_| data.file.read_exact(&mut head))
        .map_err(|e| TensorError::io(&path, e))?;
    let rel = path.display().to_string();
    let tensors = if head.starts_with(b"PK\x03\x04") {
        let located = data
            .located
            .get_or_insert_with(|| zip::locate(&mut data.file, data.size, true));
        let archive = located
            .archives
            .iter()
            .find(|a| a.start == stored.offset)
            .cloned()
            .ok_or_else(|| {
                TensorError::malformed(
                    &path,
                    format!(
                        "no complete torch zip at byte {} (chunk of `{fqn}`)",
                        stored.offset
                    ),
                )
            })?;
        torch_archive(&path, &mut data.file, &archive, &rel)?
    } else if is_safetensors(&head, data.size - stored.offset) {
        // With `serialization_format=SAFETENSORS` every item of the file points at the
        // start of the one blob (its length is the tensor's): the tensor is found by
        // name in the blob's header.
        safetensors_at(
            &path,
            &mut data.file,
            stored.offset,
            data.size - stored.offset,
            &rel,
        )?
        .into_iter()
        .filter(|t| t.name == fqn)
        .collect()
    } else {
        return Err(TensorError::malformed(
            &path,
            format!(
                "bytes {}..+{} (chunk of `{fqn}`) hold neither a torch zip nor safetensors",
                stored.offset, stored.length
            ),
        ));
    };
    let [tensor] = &tensors[..] else {
        return Err(TensorError::malformed(
            &path,
            format!(
                "the item at byte {} holds {} tensors, not the one chunk of `{fqn}`",
                stored.offset,
                tensors.len()
            ),
        ));
    };
    if tensor.dtype != dtype {
        return Err(TensorError::malformed(
            &path,
            format!(
                "chunk of `{fqn}` at byte {} is {}, .metadata says {}",
                stored.offset,
                tensor.dtype_name(),
                dtype.safetensors_name()
            ),
        ));
    }
    Ok(tensor.pieces[0].clone())
}
