//! The tensors of the two containers that hold tensor data: a safetensors file (or a
//! safetensors blob inside a DCP data file) and a torch zip archive (a whole `.pt`, or
//! one item of a DCP data file), read from the header and from `data.pkl` (parsed, never
//! executed) with positioned reads.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use super::model::{Entry, Piece, Tensor, contiguous};
use crate::Error;
use crate::pickle_inspector::MAX_PICKLE_FILE;
use crate::safetensors::MAX_HEADER;
use crate::values::TensorDtype;
use crate::zip::{self, Archive};
use crate::{pickle, torch};

pub(super) fn read_at(file: &mut File, path: &Path, at: u64, len: u64) -> Result<Vec<u8>, Error> {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    file.seek(SeekFrom::Start(at))
        .and_then(|_| file.read_exact(&mut buf))
        .map_err(|e| Error::io(path, e))?;
    Ok(buf)
}

/// The tensors of a safetensors file, or of a safetensors blob of `len` bytes starting
/// at byte `base` of `file` (a DCP data file).
pub(super) fn safetensors_at(
    path: &Path,
    file: &mut File,
    base: u64,
    len: u64,
    rel: &str,
) -> Result<Vec<Tensor>, Error> {
    let n = u64::from_le_bytes(read_at(file, path, base, 8)?.try_into().expect("8 bytes"));
    if n > MAX_HEADER || n.saturating_add(8) > len {
        return Err(Error::malformed(
            path,
            format!("safetensors header length {n} does not fit the file"),
        ));
    }
    let header = read_at(file, path, base + 8, n)?;
    let map: serde_json::Map<String, Value> = serde_json::from_slice(&header)
        .map_err(|e| Error::malformed(path, format!("safetensors header is not JSON: {e}")))?;
    let data = base + 8 + n;
    let data_len = len - 8 - n;
    let mut out = Vec::new();
    for (name, value) in &map {
        if name == "__metadata__" {
            continue;
        }
        let bad = |why: &str| Error::malformed(path, format!("tensor `{name}`: {why}"));
        let dtype = value
            .get("dtype")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no dtype"))?;
        let dtype = TensorDtype::from_safetensors(dtype)
            .ok_or_else(|| bad(&format!("dtype {dtype} is not one shardsmith reads")))?;
        let ints = |key: &str| -> Option<Vec<u64>> {
            value
                .get(key)?
                .as_array()?
                .iter()
                .map(Value::as_u64)
                .collect()
        };
        let shape = ints("shape").ok_or_else(|| bad("shape is not a list of integers"))?;
        let offsets = ints("data_offsets").unwrap_or_default();
        let [start, end] = offsets[..] else {
            return Err(bad("data_offsets is not two integers"));
        };
        if start > end || end > data_len {
            return Err(bad(&format!(
                "data_offsets [{start}, {end}] outside the {data_len} data bytes"
            )));
        }
        let tensor = Tensor {
            name: name.clone(),
            dtype,
            pieces: vec![Piece {
                path: path.to_path_buf(),
                base: data + start,
                len: end - start,
                offset: 0,
                stride: contiguous(&shape),
                at: vec![0; shape.len()],
                shape: shape.clone(),
                encoded: None,
            }],
            shape,
            file: rel.to_string(),
        };
        if tensor.bytes() != Some(end - start) {
            return Err(bad(&format!(
                "{} bytes for shape {:?} of {}",
                end - start,
                tensor.shape,
                tensor.dtype_name()
            )));
        }
        out.push(tensor);
    }
    Ok(out)
}

/// The tensors of the torch zip `archive` of `file` (the whole file, or one item of a
/// DCP data file).
pub(super) fn torch_archive(
    path: &Path,
    file: &mut File,
    archive: &Archive,
    rel: &str,
) -> Result<Vec<Tensor>, Error> {
    torch_archive_all(path, file, archive, rel).map(|(tensors, _)| tensors)
}

/// The tensors of the torch zip `archive` of `file`, and its values that are not
/// tensors.
pub(super) fn torch_archive_all(
    path: &Path,
    file: &mut File,
    archive: &Archive,
    rel: &str,
) -> Result<(Vec<Tensor>, Vec<Entry>), Error> {
    let pkl = archive
        .entries
        .iter()
        .find(|e| e.name.ends_with("data.pkl"))
        .ok_or_else(|| Error::malformed(path, "a zip without data.pkl"))?;
    let prefix = &pkl.name[..pkl.name.len() - "data.pkl".len()];
    let dup = file.try_clone().map_err(|e| Error::io(path, e))?;
    let stored = |name: &str| -> Result<(u64, u64), Error> {
        let entry = archive
            .entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::malformed(path, format!("no member `{name}`")))?;
        if entry.method != 0 {
            return Err(Error::malformed(
                path,
                format!("member `{name}` is compressed; torch stores members uncompressed"),
            ));
        }
        let mut f = dup.try_clone().map_err(|e| Error::io(path, e))?;
        let at = zip::data_start(&mut f, entry).map_err(|e| Error::io(path, e))?;
        Ok((at, entry.size))
    };
    if let Ok((at, size)) = stored(&format!("{prefix}byteorder"))
        && size <= 16
        && read_at(file, path, at, size)? != b"little"
    {
        return Err(Error::Unsupported {
            path: path.display().to_string(),
            reason: "saved on a big-endian machine; only little-endian checkpoints are read".into(),
        });
    }
    if pkl.size > MAX_PICKLE_FILE {
        return Err(Error::malformed(
            path,
            format!("data.pkl of {} bytes is too large", pkl.size),
        ));
    }
    let (at, size) = stored(&pkl.name)?;
    let bytes = read_at(file, path, at, size)?;
    let p =
        pickle::parse(&bytes).map_err(|e| Error::malformed(path, format!("data.pkl: {e:?}")))?;
    let mut contents = torch::contents(&p);
    unread(path, &contents)?;
    let entries = std::mem::take(&mut contents.entries)
        .into_iter()
        .map(|e| Entry::of(e, rel))
        .collect();
    let tensors = views(path, contents, rel, |key| {
        stored(&format!("{prefix}data/{key}"))
    })?;
    Ok((tensors, entries))
}

/// The tensors of a parsed torch pickle, each a strided view of the storage `storage`
/// locates (`(first byte, bytes)` by record key): the one reading of views for torch
/// zips and legacy files. A tensor saved under several names (`{'a': t, 'b': t}`, tied
/// weights) is one tensor per name, as `torch.load` returns it. A view with a
/// [`crate::torch::Fault`] is refused in the words `verify` reports it in. The caller
/// has refused other layouts ([`unread`]).
pub(super) fn views(
    path: &Path,
    contents: torch::Contents,
    rel: &str,
    mut storage: impl FnMut(&str) -> Result<(u64, u64), Error>,
) -> Result<Vec<Tensor>, Error> {
    if contents.names_truncated {
        return Err(Error::malformed(
            path,
            "the pickle reaches its values by more paths than this reader follows: not every tensor name could be listed",
        ));
    }
    let mut out = Vec::new();
    for view in contents.views {
        if let Some(fault) = &view.fault {
            return Err(Error::malformed(
                path,
                fault.message(&view.name, &view.storage),
            ));
        }
        let bad = |why: &str| Error::malformed(path, format!("tensor `{}`: {why}", view.name));
        let (Some(dtype), Some(offset), Some(stride)) = (view.dtype, view.offset, &view.stride)
        else {
            return Err(bad("its dtype, storage offset or strides are not known"));
        };
        let (base, len) = storage(&view.storage)?;
        let piece = Piece {
            path: path.to_path_buf(),
            base,
            len,
            offset,
            stride: stride.clone(),
            at: vec![0; view.shape.len()],
            shape: view.shape.clone(),
            encoded: None,
        };
        for name in view.names() {
            out.push(Tensor {
                name: name.clone(),
                dtype,
                pieces: vec![piece.clone()],
                shape: view.shape.clone(),
                file: rel.to_string(),
            });
        }
    }
    Ok(out)
}

/// Refuses a pickle holding tensors that are not plain strided views (quantized,
/// sparse, nested, subclass wrappers): comparing the rest would call two checkpoints the
/// same while those differ.
pub(super) fn unread(path: &Path, contents: &torch::Contents) -> Result<(), Error> {
    match contents.other_rebuilds.first() {
        None => Ok(()),
        Some(first) => Err(Error::Unsupported {
            path: path.display().to_string(),
            reason: format!(
                "holds tensors rebuilt by `{first}` (quantized, sparse or another layout), which shardsmith does not read as plain tensors; compare them with torch"
            ),
        }),
    }
}
