//! The tensors of a legacy torch file (`_use_new_zipfile_serialization=False`, torch
//! before 1.6): five pickles back to back (magic number, protocol version, sys_info,
//! the object, the sorted list of storage keys), then each storage in that order as
//! its element count (8 bytes, little-endian) and its raw bytes. The object's tensors
//! are views into those storages, as in a torch zip.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::model::{Entry, Tensor};
use crate::Error;
use crate::legacy::{self, HeadError};
use crate::pickle_inspector::MAX_PICKLE_FILE;

/// The tensors of the legacy torch file `path` (`len` bytes), shown as `rel`, and its
/// values that are not tensors: the layout read as `verify` reads it
/// ([`crate::legacy`]), and refused on any problem `torch.load` would fail on.
pub(super) fn tensors(
    path: &Path,
    file: &mut File,
    len: u64,
    rel: &str,
) -> Result<(Vec<Tensor>, Vec<Entry>), Error> {
    let mut head = vec![0u8; MAX_PICKLE_FILE.min(len) as usize];
    file.read_exact_at(&mut head, 0)
        .map_err(|e| Error::io(path, e))?;
    let bad = |why: String| Error::malformed(path, why);
    let mut head = legacy::head(&head).map_err(|e: HeadError| {
        let limit = match e.truncated() && len > MAX_PICKLE_FILE {
            true => " (the pickles must fit in the first 256 MiB)",
            false => "",
        };
        bad(format!("{} at byte {}{limit}", e.message(), e.at()))
    })?;
    if head.big_endian {
        return Err(Error::Unsupported {
            path: path.display().to_string(),
            reason: "saved on a big-endian machine; only little-endian checkpoints are read".into(),
        });
    }
    let (records, problems) = legacy::walk_at(&head, len, |at, buf| {
        let n = buf.len().min(len.saturating_sub(at) as usize);
        file.read_exact_at(&mut buf[..n], at).map(|()| n)
    })
    .map_err(|e| Error::io(path, e))?;
    if let Some(p) = problems.iter().find(|p| p.is_error()) {
        return Err(bad(p.message(len)));
    }
    super::containers::unread(path, &head.contents)?;
    let entries = std::mem::take(&mut head.contents.entries)
        .into_iter()
        .map(|e| Entry::of(e, rel))
        .collect();
    let tensors = super::containers::views(path, head.contents, rel, |key| {
        records
            .iter()
            .find(|r| r.key == key)
            .map(|r| (r.data, r.bytes))
            .ok_or_else(|| {
                bad(format!(
                    "storage `{key}` of a tensor is not in the file's storage list"
                ))
            })
    })?;
    Ok((tensors, entries))
}

#[cfg(test)]
mod tests {
    use super::super::files::of_file;
    use crate::Error;

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
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
    }
}
