//! What `ls` shows of a checkpoint file: its tensors with dtype, shape and bytes, read
//! from the safetensors header, or for torch zips, legacy torch files and DCP
//! checkpoints by the tensor reader `diff` uses ([`crate::tensors::of_file`]), so the
//! two list the same tensors under the same names and refuse the same files. Small
//! positioned reads only; the tensor data is not read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use super::safetensors::MAX_HEADER;
use crate::{Error, Result};

/// One tensor as `ls` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    /// Name (`model.layers.0.weight`).
    pub name: String,
    /// Element type, safetensors spelling (`F32`, `BF16`, `I64`).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Bytes of its elements.
    pub bytes: u64,
}

/// The tensors of the checkpoint file at `path`, in the order the file lists them, or
/// `Ok(None)` when it is not a checkpoint file (safetensors, torch zip, legacy torch, a
/// DCP `.metadata`).
pub fn list_tensors(path: &Path) -> Result<Option<Vec<TensorEntry>>> {
    let unreadable = |source| Error::Unreadable {
        path: path.display().to_string(),
        source,
    };
    let mut file = File::open(path).map_err(unreadable)?;
    let len = file.metadata().map_err(unreadable)?.len();
    let mut head = Vec::new();
    (&mut file)
        .take(64)
        .read_to_end(&mut head)
        .map_err(unreadable)?;
    if super::safetensors::is_safetensors(&head, len) {
        return safetensors(path, &mut file, len).map(Some);
    }
    let dcp = path.file_name().is_some_and(|n| n == ".metadata");
    let zip = head.starts_with(b"PK\x03\x04");
    if dcp || zip || head.starts_with(super::legacy::LEGACY_MAGIC) {
        // A torch zip, a DCP checkpoint (its tensors as `.metadata` declares them,
        // whole) and a legacy torch file: as the tensor reader of `diff` reads them (a
        // zip without `data.pkl` is not a checkpoint).
        let rel = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let found = super::tensors::of_file(path, &rel)?;
        return Ok(found.map(|tensors| {
            tensors
                .iter()
                .map(|t| TensorEntry {
                    name: t.name.clone(),
                    dtype: t.dtype_name(),
                    shape: t.shape.clone(),
                    bytes: t.bytes().unwrap_or(0),
                })
                .collect()
        }));
    }
    Ok(None)
}

/// The tensors a safetensors header lists; its errors name `path`.
fn safetensors(path: &Path, file: &mut File, len: u64) -> Result<Vec<TensorEntry>> {
    let mut n = [0u8; 8];
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut n))
        .map_err(|e| Error::io(path, e))?;
    let n = u64::from_le_bytes(n);
    if n > MAX_HEADER || 8 + n > len {
        return Err(Error::malformed(
            path,
            format!("header length {n} does not fit the file"),
        ));
    }
    let mut header = vec![0u8; n as usize];
    file.read_exact(&mut header)
        .map_err(|e| Error::io(path, e))?;
    let map: serde_json::Map<String, Value> = serde_json::from_slice(&header)
        .map_err(|e| Error::malformed(path, format!("header is not JSON: {e}")))?;
    let mut out = Vec::new();
    for (name, value) in &map {
        if name == "__metadata__" {
            continue;
        }
        let dtype = value.get("dtype").and_then(Value::as_str).unwrap_or("?");
        let shape = value
            .get("shape")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let offsets: Vec<u64> = value
            .get("data_offsets")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let bytes = match offsets[..] {
            [start, end] => end.saturating_sub(start),
            _ => 0,
        };
        out.push((
            offsets.first().copied().unwrap_or(0),
            TensorEntry {
                name: name.clone(),
                dtype: dtype.to_string(),
                shape,
                bytes,
            },
        ));
    }
    // The order of the data, as the writer laid the tensors out.
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    Ok(out.into_iter().map(|(_, t)| t).collect())
}
