use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::tree::FileTree;
use shardsmith_manifest::{MANIFEST_FILE, SUMS_FILE};
use shardsmith_shard::{FormatChoice, FormatKind, FormatOptions};
use shardsmith_store::Result as StoreResult;
use shardsmith_store::{
    InputListing, InputSource, LocalDir, LocalTree, RangeRead, ReadError, ShardFile,
};

fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, data) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
    dir
}

fn corpus(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        let class = dir.path().join(format!("c{}", i % 3));
        std::fs::create_dir_all(&class).unwrap();
        std::fs::write(
            class.join(format!("{i:04}.bin")),
            vec![i as u8; 100 + i * 37],
        )
        .unwrap();
        std::fs::write(
            class.join(format!("{i:04}.json")),
            format!("{{\"i\": {i}}}"),
        )
        .unwrap();
    }
    dir
}

/// What a test run is given: the shard size (which lives with the format) and the
/// pack settings.
#[derive(Clone)]
struct Opts {
    shard_size: u64,
    pack: PackSettings,
}

impl Opts {
    fn with(mut self, change: impl FnOnce(&mut PackSettings)) -> Self {
        change(&mut self.pack);
        self
    }

    fn wds(&self) -> FormatChoice {
        let options = FormatOptions {
            shard_size: Some(self.shard_size),
            ..FormatOptions::default()
        };
        FormatChoice::new(FormatKind::from_name("webdataset").unwrap(), &options).unwrap()
    }
}

fn settings(shard_size: u64) -> Opts {
    Opts {
        shard_size,
        pack: PackSettings::default(),
    }
}

fn run(input: &Path, output: &Path, settings: &Opts) -> Result<PackReport> {
    let sink = LocalDir::create(output).unwrap();
    pack(
        &FileTree::new(&LocalTree::new(input)),
        &sink,
        &settings.wds(),
        &settings.pack,
        &NoProgress,
    )
}

/// Every file of a directory with its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Members of a shard as (name, bytes).
fn members(path: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(path).unwrap();
    tar::Archive::new(file)
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (e.path().unwrap().to_string_lossy().into_owned(), data)
        })
        .collect()
}

#[test]
fn shards_hold_every_input_byte_within_the_size_limit() {
    let input = corpus(30);
    let out = tempfile::tempdir().unwrap();
    let report = run(input.path(), out.path(), &settings(8192)).unwrap();
    let m = &report.manifest;
    assert!(m.files.len() > 3);
    let mut seen = Vec::new();
    for entry in &m.files {
        let path = out.path().join(&entry.path);
        assert!(entry.size <= 8192 || entry.samples == Some(1), "{entry:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), entry.size);
        assert_eq!(sha256_hex(&std::fs::read(&path).unwrap()), entry.sha256);
        let names = members(&path);
        assert_eq!(
            names.first().unwrap().0.split('.').next(),
            entry.first_key.as_deref()
        );
        seen.extend(names);
    }
    assert_eq!(seen.len(), 60);
    for (name, data) in seen {
        assert_eq!(
            std::fs::read(input.path().join(&name)).unwrap(),
            data,
            "{name}"
        );
    }
    assert_eq!(m.totals.samples, Some(30));
    let sums = std::fs::read_to_string(out.path().join(SUMS_FILE)).unwrap();
    assert_eq!(sums.lines().count(), m.files.len());
    assert!(!out.path().join(state::STATE_DIR).exists());
}

#[test]
fn output_is_identical_for_any_thread_count_and_shuffle_is_seeded() {
    let input = corpus(40);
    let mut outs = Vec::new();
    for threads in [1, 2, 5] {
        let out = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let s = settings(10_000).with(|s| s.shuffle_seed = Some(9));
        pool.install(|| run(input.path(), out.path(), &s)).unwrap();
        outs.push(snapshot(out.path()));
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
    let unshuffled = tempfile::tempdir().unwrap();
    run(input.path(), unshuffled.path(), &settings(10_000)).unwrap();
    assert_ne!(snapshot(unshuffled.path()), outs[0]);
}

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

/// A source whose listed file `bad` cannot be read.
struct Unreadable {
    inner: LocalTree,
    bad: &'static str,
}

impl InputSource for Unreadable {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn list(&self) -> StoreResult<InputListing> {
        self.inner.list()
    }
    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        if rel == self.bad {
            return Err(ReadError::Unreadable(
                "Permission denied (os error 13)".into(),
            ));
        }
        self.inner.read_into(rel, size, buf)
    }
    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
        self.inner.open(rel)
    }
    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
        self.inner.open_ranged(rel)
    }
}

#[test]
fn unreadable_and_invalid_inputs_are_left_out_whole_or_fail_under_strict() {
    let input = tree(&[
        ("a.jpg", b"\xff\xd8\xff\xe0 fake but marked jpeg \xff\xd9"),
        ("a.json", b"{}"),
        ("b.json", b"{broken"),
        ("b.txt", b"caption"),
        ("c.txt", b"fine"),
        ("c.cls", b"3"),
        ("noext", b"x"),
    ]);
    let out = tempfile::tempdir().unwrap();
    let sink = LocalDir::create(out.path()).unwrap();
    let source = Unreadable {
        inner: LocalTree::new(input.path()),
        bad: "a.json",
    };
    let report = pack(
        &FileTree::new(&source),
        &sink,
        &settings(1 << 20).wds(),
        &settings(1 << 20).pack,
        &NoProgress,
    )
    .unwrap();
    let skipped: Vec<(&str, &str)> = report
        .manifest
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    assert_eq!(skipped[0].0, "a.jpg");
    assert!(skipped[0].1.contains("left out with `a.json`"));
    assert!(skipped[1].1.contains("Permission denied"));
    assert!(skipped[2].1.contains("not valid JSON"));
    assert!(skipped[3].1.contains("left out with `b.json`"));
    assert!(skipped[4].1.contains("no extension"));
    assert_eq!(report.manifest.totals.samples, Some(1));
    let names: Vec<String> = members(&out.path().join("shard-000000.tar"))
        .into_iter()
        .map(|m| m.0)
        .collect();
    assert_eq!(names, ["c.cls", "c.txt"]);

    let strict_out = tempfile::tempdir().unwrap();
    let err = run(
        input.path(),
        strict_out.path(),
        &settings(1 << 20).with(|s| s.strict = true),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("`noext` has no extension"),
        "{err}"
    );
    std::fs::remove_file(input.path().join("noext")).unwrap();
    let sink = LocalDir::create(strict_out.path()).unwrap();
    let err = pack(
        &FileTree::new(&source),
        &sink,
        &settings(1 << 20).wds(),
        &settings(1 << 20).with(|s| s.strict = true).pack,
        &NoProgress,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Strict { .. }), "{err}");
}

#[test]
fn empty_input_and_oversize_samples() {
    let empty = tree(&[("README", b"no extension")]);
    let out = tempfile::tempdir().unwrap();
    let err = run(empty.path(), out.path(), &settings(8192))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no samples") && err.contains("all 1 input file(s) were left out"),
        "{err}"
    );
    let input = tree(&[
        ("a.bin", &[1u8; 10]),
        ("b.bin", &[2u8; 20_000]),
        ("c.bin", &[3u8; 10]),
    ]);
    let report = run(input.path(), out.path(), &settings(8192)).unwrap();
    assert_eq!(report.manifest.files.len(), 3);
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains("sample `b`")
            && report.warnings[0].contains("shard-000001.tar"),
        "{:?}",
        report.warnings
    );
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

mod crash;
pub(crate) mod left_out;
