//! The steps every run that writes a dataset ends with, in this order: count and seal
//! the manifest, write `SHA256SUMS`, write `manifest.json` last (its presence means the
//! dataset is complete), then remove the resume state.

use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, Digester, FileEntry, Manifest};

use crate::{OutputSink, Result, resume};

/// Writes `name` with `bytes` atomically and returns its manifest entry (a dataset-level
/// file such as MDS `index.json`, hashed from the bytes written).
pub fn write_entry(sink: &dyn OutputSink, name: &str, bytes: &[u8]) -> Result<FileEntry> {
    sink.write_atomic(name, bytes)?;
    let mut digester = Digester::new(DEFAULT_CHUNK_SIZE);
    digester.update(bytes);
    Ok(FileEntry::new(name.to_string(), &digester.finish()))
}

/// Writes `name` with what `content` reads (a dataset-level file built on disk, too large
/// to hold in memory: Energon's `index.sqlite`), hashing while copying, atomically (a
/// temporary name, then a rename); returns its manifest entry.
pub fn write_entry_from(
    sink: &dyn OutputSink,
    name: &str,
    content: &mut dyn std::io::Read,
) -> Result<FileEntry> {
    let shown = || format!("{}/{name}", sink.describe());
    let mut file = sink.create(name)?;
    let mut digester = Digester::new(DEFAULT_CHUNK_SIZE);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match content.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(crate::Error::io("reading", shown(), e)),
        };
        digester.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| crate::Error::io("writing", shown(), e))?;
    }
    file.commit()?;
    Ok(FileEntry::new(name.to_string(), &digester.finish()))
}

/// Seals `manifest` (whose files and skipped inputs are final), writes `SHA256SUMS` and
/// then `manifest.json`, and clears the resume state.
///
/// Once `manifest.json` is written the dataset is complete: a failure to clear the
/// state after it (a store that died that moment) is no failure of the run, and comes
/// back as a warning to show, not as an error.
pub fn seal(sink: &dyn OutputSink, manifest: &mut Manifest) -> Result<Option<String>> {
    manifest.recount();
    manifest.seal();
    shardsmith_manifest::commit(&manifest.files, &manifest.to_json_bytes(), |name, bytes| {
        sink.write_atomic(name, bytes)
    })?;
    Ok(resume::clear(sink).err().map(|e| left_state(sink, &e)))
}

/// The warning for a complete dataset whose run state could not be removed.
pub fn left_state(sink: &dyn OutputSink, e: &crate::Error) -> String {
    format!(
        "the dataset in {} is complete (its manifest is written), but this run's state could not be removed ({e}); `verify` warns about it until the same command is run again or `{}` is deleted",
        sink.describe(),
        resume::STATE_DIR
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LocalDir, ShardFile};
    use shardsmith_manifest::MANIFEST_FILE;

    /// A local directory whose removals fail, as a store that died just after the
    /// manifest was written.
    struct Dying(LocalDir);

    impl OutputSink for Dying {
        fn describe(&self) -> String {
            self.0.describe()
        }
        fn create(&self, name: &str) -> Result<Box<dyn ShardFile>> {
            self.0.create(name)
        }
        fn size(&self, name: &str) -> Result<Option<u64>> {
            self.0.size(name)
        }
        fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
            self.0.read(name)
        }
        fn remove(&self, name: &str) -> Result<()> {
            Err(crate::Error::Remote {
                op: "deleting",
                url: name.into(),
                message: "connection refused".into(),
            })
        }
        fn list(&self) -> Result<Vec<String>> {
            self.0.list()
        }
        fn lock_named(&self, tag: &str) -> Result<Box<dyn Send>> {
            self.0.lock_named(tag)
        }
        fn rename(&self, from: &str, to: &str) -> Result<()> {
            self.0.rename(from, to)
        }
        fn child(&self, sub: &str) -> Result<Box<dyn OutputSink>> {
            self.0.child(sub)
        }
    }

    #[test]
    fn a_state_that_cannot_be_cleared_after_the_manifest_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let sink = Dying(LocalDir::create(dir.path()).unwrap());
        sink.write_atomic(&format!("{}/run.json", resume::STATE_DIR), b"{}")
            .unwrap();
        let entry = write_entry(&sink, "a.bin", b"abc").unwrap();
        let mut manifest = Manifest::new(
            shardsmith_manifest::ManifestKind::Pack,
            DEFAULT_CHUNK_SIZE,
            vec![entry],
        );
        let warning = seal(&sink, &mut manifest).unwrap().expect("a warning");
        assert!(
            dir.path().join(MANIFEST_FILE).exists(),
            "the dataset is complete"
        );
        assert!(
            warning.contains("is complete (its manifest is written), but this run's state could not be removed (deleting `.shardsmith-state`: connection refused)"),
            "{warning}"
        );
        // Where it can be cleared, no warning.
        let plain = LocalDir::create(dir.path().join("plain")).unwrap();
        assert!(seal(&plain, &mut manifest).unwrap().is_none());
    }
}
