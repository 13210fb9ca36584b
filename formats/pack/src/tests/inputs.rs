//! Inputs that cannot be packed as they are: unreadable or invalid files left out (or
//! fatal under --strict), an empty input, oversize samples.

use super::*;

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
