//! The tensors of one checkpoint file (safetensors, torch zip, legacy torch, a DCP
//! `.metadata`) and of a directory of them: which reader a file needs, told from its
//! content.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::containers::{safetensors_at, torch_archive_all};
use super::model::{Checkpoint, Entry, Tensor};
use crate::Error;
use crate::legacy::LEGACY_MAGIC;
use crate::names::{is_checkpoint_name, is_temp_leftover};
use crate::safetensors::is_safetensors;
use crate::zip;

fn open_file(path: &Path) -> Result<(File, u64), Error> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    Ok((file, len))
}

/// What one file holds: its tensors and its values that are not tensors.
type Found = (Vec<Tensor>, Vec<Entry>);

/// The tensors of the checkpoint file `path` (shown as `rel`), `Ok(None)` when it is
/// neither safetensors nor a torch zip. A DCP `.metadata` stands for its directory.
pub(crate) fn file(path: &Path, rel: &str) -> Result<Option<Vec<Tensor>>, Error> {
    Ok(file_all(path, rel)?.map(|(tensors, _)| tensors))
}

/// [`file`], with the values that are not tensors (torch zip and legacy files).
fn file_all(path: &Path, rel: &str) -> Result<Option<Found>, Error> {
    if path.file_name().is_some_and(|n| n == ".metadata") {
        let dir = path.parent().unwrap_or(Path::new("."));
        let tensors = super::dcp::directory(dir, rel)?;
        return Ok(Some((tensors, dcp_bytes_items(path, rel)?)));
    }
    let (mut file, len) = open_file(path)?;
    let mut head = Vec::new();
    (&mut file)
        .take(64)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    if head.starts_with(b"PK\x03\x04") {
        let located = zip::locate(&mut file, len, false);
        if let Some(damage) = located.damage {
            return Err(Error::malformed(path, damage.message));
        }
        let Some(archive) = located.archives.first() else {
            return Err(Error::malformed(path, "no zip central directory"));
        };
        if !archive.entries.iter().any(|e| e.name.ends_with("data.pkl")) {
            return Ok(None);
        }
        return torch_archive_all(path, &mut file, archive, rel).map(Some);
    }
    if is_safetensors(&head, len) {
        return safetensors_at(path, &mut file, 0, len, rel).map(|t| Some((t, Vec::new())));
    }
    if head.starts_with(LEGACY_MAGIC) {
        return super::legacy::tensors(path, &mut file, len, rel).map(Some);
    }
    Ok(None)
}

/// The bytes items of the DCP `.metadata` at `path` (a step, hyper-parameters): values
/// beside the tensors whose values are not read here, so `diff` names them as not
/// compared.
fn dcp_bytes_items(path: &Path, rel: &str) -> Result<Vec<Entry>, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let p = crate::pickle::parse(&bytes)
        .map_err(|e| Error::malformed(path, format!("not a readable pickle: {e}")))?;
    Ok(crate::torch::dcp_bytes_items(&p)
        .into_iter()
        .map(|name| Entry {
            name,
            shown: "<bytes item, not read>".into(),
            digest: None,
            file: rel.to_string(),
        })
        .collect())
}

/// The tensors of every checkpoint file under `dir` (a DCP directory by its
/// `.metadata`; temporary leftovers and non-checkpoint files left out).
fn directory(dir: &Path) -> Result<Found, Error> {
    let mut out = Vec::new();
    let mut entries = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((at, prefix)) = stack.pop() {
        let mut names: Vec<String> = std::fs::read_dir(&at)
            .map_err(|e| Error::io(&at, e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let dcp = names.iter().any(|n| n == ".metadata");
        for name in names.iter().rev() {
            let path = at.join(name);
            let rel = format!("{prefix}{name}");
            if path.is_dir() {
                stack.push((path, format!("{rel}/")));
                continue;
            }
            if is_temp_leftover(&rel) || (dcp && name.ends_with(".distcp")) {
                continue;
            }
            let checkpointish = is_checkpoint_name(&rel) || name.ends_with(".bin");
            if !checkpointish {
                continue;
            }
            match file_all(&path, &rel)? {
                Some((tensors, values)) => {
                    out.extend(tensors);
                    entries.extend(values);
                }
                None if is_checkpoint_name(&rel) => {
                    return Err(Error::Unsupported {
                        path: path.display().to_string(),
                        reason: "is named like a checkpoint but holds no format whose tensors shardsmith reads (safetensors, torch zip, legacy torch, DCP)".into(),
                    });
                }
                None => {}
            }
        }
    }
    Ok((out, entries))
}

/// Every tensor of the checkpoint at `path`: a safetensors file, a torch zip or legacy
/// torch file, a DCP directory (or its `.metadata`), or a directory of such files
/// (sharded safetensors, DeepSpeed or Megatron rank files), sorted by name. When two
/// files of a directory hold the same name (one per rank), every tensor of the
/// directory is named `FILE:NAME`, FILE relative to the directory.
pub fn open(path: &Path) -> Result<Vec<Tensor>, Error> {
    Ok(open_all(path)?.tensors)
}

/// [`open`], with the values beside the tensors that are not tensors (a step count, a
/// learning rate), named as the tensors are (`FILE:NAME` too when two files of a
/// directory hold the same name).
pub fn open_all(path: &Path) -> Result<Checkpoint, Error> {
    let (mut tensors, mut entries) = if path.is_dir() {
        directory(path)?
    } else {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match file_all(path, &name)? {
            Some(found) => found,
            None => {
                return Err(Error::Unsupported {
                    path: path.display().to_string(),
                    reason: "is not a checkpoint whose tensors shardsmith reads (safetensors, a torch zip, a DCP directory)".into(),
                });
            }
        }
    };
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let dir = path.is_dir();
    let prefixed = dir && tensors.windows(2).any(|w| w[0].name == w[1].name);
    if prefixed {
        for t in &mut tensors {
            t.name = format!("{}:{}", t.file, t.name);
        }
        tensors.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if prefixed || (dir && entries.windows(2).any(|w| w[0].name == w[1].name)) {
        for e in &mut entries {
            e.name = format!("{}:{}", e.file, e.name);
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if let Some(pair) = tensors.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(Error::Malformed {
            path: path.display().to_string(),
            reason: format!(
                "tensor `{}` is in both `{}` and `{}`; compare the files one by one",
                pair[0].name, pair[0].file, pair[1].file
            ),
        });
    }
    Ok(Checkpoint { tensors, entries })
}

/// The tensors of the one checkpoint file `path`, shown as `rel`; `Ok(None)` when it is
/// not a checkpoint file whose tensors are read (a `.metadata` is read as its DCP
/// directory).
pub fn of_file(path: &Path, rel: &str) -> Result<Option<Vec<Tensor>>, Error> {
    file(path, rel)
}
