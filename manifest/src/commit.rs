//! The one way a dataset is committed, whoever produced it (`pack`, `tokenize`, `merge`,
//! `stage`, `manifest`, locally or in a bucket): `SHA256SUMS` first, `manifest.json`
//! last, each written atomically. A reader that finds `manifest.json` finds a complete
//! dataset with its `SHA256SUMS` beside it; a run killed between the two leaves no
//! manifest, so the dataset reads as unfinished, never as complete with stale sums.

use crate::{FileEntry, MANIFEST_FILE, SUMS_FILE, sums};

/// Writes the `SHA256SUMS` of `files` and then `manifest_bytes` as `manifest.json`
/// through `write(name, bytes)`, which must write a file atomically (a reader sees all
/// of it or none) and durably. Stops at the first failure: no manifest after failed
/// sums. `manifest_bytes` is the manifest as stored (a staged copy keeps its source's
/// bytes; a new manifest passes [`crate::Manifest::to_json_bytes`]).
pub fn commit<E>(
    files: &[FileEntry],
    manifest_bytes: &[u8],
    mut write: impl FnMut(&str, &[u8]) -> Result<(), E>,
) -> Result<(), E> {
    write(SUMS_FILE, sums::render(files).as_bytes())?;
    write(MANIFEST_FILE, manifest_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileDigest;

    fn entry(name: &str, content: &[u8]) -> FileEntry {
        let mut digester = crate::Digester::new(crate::DEFAULT_CHUNK_SIZE);
        digester.update(content);
        let digest: FileDigest = digester.finish();
        FileEntry::new(name.to_string(), &digest)
    }

    #[test]
    fn sums_first_then_the_manifest_and_nothing_after_a_failure() {
        let files = [entry("a.tar", b"a"), entry("b.tar", b"bb")];
        let mut written = Vec::new();
        commit(&files, b"{}", |name, bytes| {
            written.push((name.to_string(), bytes.to_vec()));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(written[0].0, SUMS_FILE);
        assert_eq!(written[0].1, sums::render(&files).as_bytes());
        assert_eq!(written[1], (MANIFEST_FILE.to_string(), b"{}".to_vec()));

        let mut tried = Vec::new();
        let failed = commit(&files, b"{}", |name, _| {
            tried.push(name.to_string());
            Err("disk full")
        });
        assert_eq!(failed, Err("disk full"));
        assert_eq!(tried, [SUMS_FILE]);
    }
}
