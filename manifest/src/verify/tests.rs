use super::*;
use std::path::Path;

use crate::NoInspection;
use crate::scan::scan_directory;
use crate::{FileEntry, FindingKind, MANIFEST_FILE, Manifest, SUMS_FILE, sums};

pub(super) fn options() -> VerifyOptions<'static> {
    VerifyOptions {
        manifest: None,
        expect_root: None,
        inspectors: &NoInspection,
        allow_empty: false,
        collect_digests: false,
        digest_check: None,
    }
}

fn dataset() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.bin"), vec![1u8; 3 << 20]).unwrap();
    std::fs::write(dir.path().join("b.bin"), b"bee").unwrap();
    let scan = scan_directory(dir.path(), &NoInspection, &|_| {}, &|_| {}).unwrap();
    std::fs::write(
        dir.path().join(MANIFEST_FILE),
        scan.manifest.to_json_bytes(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join(SUMS_FILE),
        sums::render(&scan.manifest.files),
    )
    .unwrap();
    dir
}

fn kinds(report: &VerifyReport) -> Vec<(FindingKind, String, Option<u64>)> {
    report
        .findings
        .iter()
        .map(|f| (f.kind, f.path.clone(), f.offset))
        .collect()
}

#[test]
fn clean_dataset_has_no_findings() {
    let dir = dataset();
    let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.files_checked, 2);
}

#[test]
fn flipped_byte_is_located_to_its_chunk() {
    let dir = dataset();
    let path = dir.path().join("a.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(2 << 20) + 5] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(
        kinds(&report),
        vec![(FindingKind::HashMismatch, "a.bin".into(), Some(2 << 20))]
    );
    assert_eq!(report.findings[0].end, Some(3 << 20));
}

#[test]
fn truncation_missing_extra_and_temp_files() {
    let dir = dataset();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("a.bin"))
        .unwrap();
    f.set_len(1 << 20).unwrap();
    std::fs::remove_file(dir.path().join("b.bin")).unwrap();
    std::fs::write(dir.path().join("c.bin"), b"extra").unwrap();
    std::fs::write(dir.path().join(".shardsmith-tmp-x"), b"t").unwrap();
    let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
    let found = kinds(&report);
    assert!(
        found.contains(&(FindingKind::SizeMismatch, "a.bin".into(), Some(1 << 20))),
        "{found:?}"
    );
    assert!(
        found.contains(&(FindingKind::HashMismatch, "a.bin".into(), Some(1 << 20))),
        "{found:?}"
    );
    assert!(found.contains(&(FindingKind::MissingFile, "b.bin".into(), None)));
    assert!(found.contains(&(FindingKind::UnlistedFile, "c.bin".into(), None)));
    assert!(found.contains(&(
        FindingKind::LeftoverTempFile,
        ".shardsmith-tmp-x".into(),
        None
    )));
    assert_eq!(report.warnings(), 1);
}

#[test]
fn edited_manifest_and_pinned_root() {
    let dir = dataset();
    let manifest_path = dir.path().join(MANIFEST_FILE);
    let (m, _) = Manifest::load(&manifest_path).unwrap();
    let text = std::fs::read_to_string(&manifest_path)
        .unwrap()
        .replace(&m.files[1].sha256, &"0".repeat(64));
    std::fs::write(&manifest_path, text).unwrap();
    let mut opts = options();
    opts.expect_root = Some(m.root_sha256.clone());
    let report = verify_path(dir.path(), &opts, &|_| {}, &|_| {}).unwrap();
    let found: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        found
            .iter()
            .filter(|k| **k == FindingKind::RootMismatch)
            .count(),
        2,
        "{found:?}"
    );
    assert!(found.contains(&FindingKind::HashMismatch));
    assert!(found.contains(&FindingKind::SumsMismatch));
}

#[test]
fn without_manifest_sums_are_used_and_gaps_found() {
    let dir = tempfile::tempdir().unwrap();
    for i in [0, 1, 3] {
        std::fs::write(dir.path().join(format!("shard-{i:06}.tar")), b"x").unwrap();
    }
    // No inspectors here: nothing but the names can be checked.
    let allow = VerifyOptions {
        allow_empty: true,
        ..options()
    };
    let report = verify_path(dir.path(), &allow, &|_| {}, &|_| {}).unwrap();
    assert_eq!(
        kinds(&report),
        vec![(FindingKind::MissingFile, "shard-000002.tar".into(), None)]
    );
    let good = dataset();
    std::fs::remove_file(good.path().join(MANIFEST_FILE)).unwrap();
    std::fs::write(good.path().join("b.bin"), b"bed").unwrap();
    let report = verify_path(good.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(
        kinds(&report),
        vec![(FindingKind::HashMismatch, "b.bin".into(), None)]
    );
}

#[test]
fn unparseable_manifest_is_a_finding() {
    let dir = dataset();
    std::fs::write(dir.path().join(MANIFEST_FILE), b"{not json").unwrap();
    let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::ManifestInvalid)
    );
}

#[test]
fn nothing_to_verify_is_a_finding_unless_allowed() {
    let empty = tempfile::tempdir().unwrap();
    let report = verify_path(empty.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(
        kinds(&report),
        vec![(FindingKind::NothingToVerify, ".".into(), None)]
    );
    assert!(
        report.findings[0]
            .message
            .starts_with("the directory holds no file")
    );
    let allow = VerifyOptions {
        allow_empty: true,
        ..options()
    };
    let report = verify_path(empty.path(), &allow, &|_| {}, &|_| {}).unwrap();
    assert!(report.findings.is_empty());

    let plain = tempfile::tempdir().unwrap();
    std::fs::write(plain.path().join("main.rs"), b"fn main() {}").unwrap();
    let report = verify_path(plain.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(
        kinds(&report),
        vec![(FindingKind::NothingToVerify, ".".into(), None)]
    );
    assert_eq!(report.checked.unchecked, 1);
    assert_eq!(report.checked.unchecked_examples, ["main.rs"]);
    // SHA256SUMS gives every file a digest to check: something was verified.
    std::fs::write(
        plain.path().join(SUMS_FILE),
        format!("{}  main.rs\n", crate::sha256_hex(b"fn main() {}")),
    )
    .unwrap();
    let report = verify_path(plain.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.checked.sums, 1);
    // A manifest of an empty directory lists nothing: still nothing verified.
    let scanned = tempfile::tempdir().unwrap();
    let scan = scan_directory(scanned.path(), &NoInspection, &|_| {}, &|_| {}).unwrap();
    std::fs::write(
        scanned.path().join(MANIFEST_FILE),
        scan.manifest.to_json_bytes(),
    )
    .unwrap();
    let report = verify_path(scanned.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(
        kinds(&report),
        vec![(FindingKind::NothingToVerify, ".".into(), None)]
    );
}

#[test]
fn another_tools_manifest_json_is_a_data_file_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(MANIFEST_FILE),
        br#"{"a": "b", "files": "a"}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("x.bin"), b"x").unwrap();
    let err = Manifest::parse(br#"{"a": "b", "files": "a"}"#, Path::new("m.json")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`m.json` is not a shardsmith manifest: it has no `\"tool\": \"shardsmith\"` member; its keys: a, files"
    );
    let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(report.manifest, None);
    assert_eq!(report.files_checked, 2, "manifest.json is one of the files");
    assert_eq!(
        report.notes,
        [
            "`manifest.json` is not a shardsmith manifest, so it was checked as one of the files: it has no `\"tool\": \"shardsmith\"` member; its keys: a, files",
            "no manifest and no SHA256SUMS: only files of a known format can be checked, by their structure; run `shardsmith manifest` when the data is written to make verification exact"
        ]
    );
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.kind != FindingKind::ManifestInvalid),
        "{:?}",
        report.findings
    );
    // Named explicitly, it is a manifest that does not fit: a finding.
    let explicit = VerifyOptions {
        manifest: Some(dir.path().join(MANIFEST_FILE)),
        ..options()
    };
    let report = verify_path(dir.path(), &explicit, &|_| {}, &|_| {}).unwrap();
    assert!(report.findings.iter().any(|f| {
        f.kind == FindingKind::ManifestInvalid
            && f.message
                .starts_with("is not a shardsmith manifest: it has no")
    }));
}

/// A manifest's chunk size is untrusted: one near 2^64 made locating a mismatch
/// overflow (a panic in debug builds, a range past the file in release).
#[test]
fn a_huge_chunk_size_locates_a_mismatch_inside_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.bin"), b"bee").unwrap();
    let mut digester = crate::Digester::new(u64::MAX);
    digester.update(b"bee");
    let mut entry = FileEntry::new("b.bin", &digester.finish());
    entry.sha256 = "0".repeat(64);
    let mut manifest = Manifest::new(crate::ManifestKind::Directory, u64::MAX, vec![entry]);
    manifest.seal();
    std::fs::write(dir.path().join(MANIFEST_FILE), manifest.to_json_bytes()).unwrap();
    let report = verify_path(dir.path(), &options(), &|_| {}, &|_| {}).unwrap();
    let finding = &report.findings[0];
    assert_eq!(finding.kind, FindingKind::HashMismatch);
    assert!(finding.offset.unwrap() <= finding.end.unwrap());
    assert!(finding.end.unwrap() <= 3);
}
