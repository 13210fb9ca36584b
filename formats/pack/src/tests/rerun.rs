//! A second run into the same output: complete, refused (other options, a foreign
//! directory) unless forced, and stopped when the input changed.

use super::*;

#[test]
fn rerun_is_complete_and_different_options_are_refused_unless_forced() {
    let input = corpus(5);
    let out = tempfile::tempdir().unwrap();
    let first = run(input.path(), out.path(), &settings(8192)).unwrap();
    let before = snapshot(out.path());
    let again = run(input.path(), out.path(), &settings(8192)).unwrap();
    assert!(again.already_complete);
    assert_eq!(again.manifest, first.manifest);
    assert_eq!(snapshot(out.path()), before);
    let err = run(input.path(), out.path(), &settings(1 << 20))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("packed differently")
            && err.contains("(`--shard-size 8KiB` vs `--shard-size 1MiB`)"),
        "{err}"
    );
    assert_eq!(snapshot(out.path()), before);
    let forced = run(
        input.path(),
        out.path(),
        &settings(1 << 20).with(|s| s.force = true),
    )
    .unwrap();
    assert_eq!(forced.manifest.files.len(), 1);
    assert_eq!(snapshot(out.path()).len(), 3, "old shards are removed");
    std::fs::write(input.path().join("c0/9999.bin"), b"new").unwrap();
    let err = run(input.path(), out.path(), &settings(1 << 20))
        .unwrap_err()
        .to_string();
    assert!(err.contains("the input files differ"), "{err}");
}

#[test]
fn foreign_directory_is_refused() {
    let input = corpus(2);
    let out = tree(&[("notes.txt", b"mine")]);
    let err = run(input.path(), out.path(), &settings(8192))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("holds no shardsmith dataset") && err.contains("`notes.txt`"),
        "{err}"
    );
    // A dataset among other files would fail `verify`: refused even with --force,
    // which never deletes foreign files.
    let err = run(
        input.path(),
        out.path(),
        &settings(8192).with(|s| s.force = true),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("would fail `verify`")
            && err.contains("(--force replaces only shardsmith's own files)"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(out.path().join("notes.txt")).unwrap(),
        b"mine",
        "--force never deletes foreign files"
    );
    assert!(!out.path().join("manifest.json").exists());
}

#[test]
fn changed_input_stops_the_run() {
    let input = tree(&[("a.bin", b"12345")]);
    let out = tempfile::tempdir().unwrap();
    struct Growing(LocalTree);
    impl InputSource for Growing {
        fn describe(&self) -> String {
            self.0.describe()
        }
        fn list(&self) -> StoreResult<InputListing> {
            let mut listing = self.0.list()?;
            listing.files[0].size -= 1;
            Ok(listing)
        }
        fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
            self.0.read_into(rel, size, buf)
        }
        fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
            self.0.open(rel)
        }
        fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
            self.0.open_ranged(rel)
        }
    }
    let sink = LocalDir::create(out.path()).unwrap();
    let err = pack(
        &FileTree::new(&Growing(LocalTree::new(input.path()))),
        &sink,
        &settings(8192).wds(),
        &settings(8192).pack,
        &NoProgress,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("`a.bin` changed while packing"),
        "{err}"
    );
    assert!(!out.path().join("shard-000000.tar").exists());
}
