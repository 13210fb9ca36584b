//! The tensors of a legacy torch file (`_use_new_zipfile_serialization=False`, torch
//! before 1.6): five pickles back to back (magic number, protocol version, sys_info,
//! the object, the sorted list of storage keys), then each storage in that order as
//! its element count (8 bytes, little-endian) and its raw bytes. The object's tensors
//! are views into those storages, as in a torch zip.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::model::{Tensor, TensorError};
use crate::pickle::{self, Node};
use crate::pickled::MAX_PICKLE_FILE;
use crate::torch;

/// The tensors of the legacy torch file `path` (`len` bytes), shown as `rel`.
pub(super) fn tensors(
    path: &Path,
    file: &mut File,
    len: u64,
    rel: &str,
) -> Result<Vec<Tensor>, TensorError> {
    let mut head = vec![0u8; MAX_PICKLE_FILE.min(len) as usize];
    file.read_exact_at(&mut head, 0)
        .map_err(|e| TensorError::io(path, e))?;
    let bad = |why: String| TensorError::malformed(path, why);
    let mut at = 0usize;
    let mut object = None;
    let mut keys = Vec::new();
    for i in 0..5 {
        let p = pickle::parse(&head[at..]).map_err(|e| {
            bad(format!(
                "pickle {} of 5 at byte {at} cannot be read: {e:?}{}",
                i + 1,
                if len > MAX_PICKLE_FILE {
                    " (the pickles must fit in the first 256 MiB)"
                } else {
                    ""
                }
            ))
        })?;
        at += p.len;
        match i {
            2 if p
                .get(p.root, "little_endian")
                .is_some_and(|v| matches!(p.node(v), Node::Bool(false))) =>
            {
                return Err(TensorError::Unsupported {
                    path: path.display().to_string(),
                    reason:
                        "saved on a big-endian machine; only little-endian checkpoints are read"
                            .into(),
                });
            }
            3 => object = Some(p),
            4 => {
                keys = p
                    .items(p.root)
                    .ok_or_else(|| bad("the storage key list is not a list".into()))?
                    .iter()
                    .map(|&k| match p.node(k) {
                        Node::Str(s) => Ok(s.clone()),
                        _ => Err(bad("a storage key is not a string".into())),
                    })
                    .collect::<Result<_, _>>()?;
            }
            _ => {}
        }
    }
    let contents = torch::contents(&object.expect("parsed above"));
    super::containers::unread(path, &contents)?;
    // Storages follow the pickles, in the order of the key list.
    let mut storages = std::collections::BTreeMap::new();
    let mut pos = at as u64;
    for key in &keys {
        let storage = contents
            .storages
            .get(key)
            .ok_or_else(|| bad(format!("storage `{key}` is listed but no tensor uses it")))?;
        // An untyped storage counts bytes; a typed one, elements of its type.
        let size = match storage.untyped {
            true => 1,
            false => storage
                .dtype
                .ok_or_else(|| {
                    bad(format!(
                        "storage `{key}` has an element type shardsmith does not know"
                    ))
                })?
                .size(),
        };
        let mut count = [0u8; 8];
        file.read_exact_at(&mut count, pos)
            .map_err(|e| bad(format!("storage `{key}` at byte {pos}: {e}")))?;
        let count = u64::from_le_bytes(count);
        let bytes = count
            .checked_mul(size)
            .filter(|&b| pos.checked_add(8).and_then(|p| p.checked_add(b)).is_some_and(|end| end <= len))
            .ok_or_else(|| {
                bad(format!(
                    "storage `{key}` at byte {pos} declares {count} elements, past the end of the {len}-byte file"
                ))
            })?;
        storages.insert(key.clone(), (pos + 8, bytes));
        pos += 8 + bytes;
    }
    super::containers::views(path, contents, rel, |key| {
        storages.get(key).copied().ok_or_else(|| {
            bad(format!(
                "storage `{key}` of a tensor is not in the file's storage list"
            ))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::files::of_file;
    use super::super::model::TensorError;

    /// Found by fuzzing (`tensors`): a legacy file whose storage declares 2^64 − 1
    /// elements overflowed the end-of-storage sum.
    #[test]
    fn a_storage_count_past_the_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.pt");
        std::fs::write(
            &path,
            include_bytes!("testdata/fuzz-legacy-storage-count.pt"),
        )
        .unwrap();
        let err = of_file(&path, "model.pt").expect_err("refused");
        assert!(matches!(err, TensorError::Malformed { .. }), "{err}");
    }
}
