//! One digest per shard (model_signing's shard serialization): against the bundle its
//! Python API wrote (`model.p256.api-shards1000.sig`, shard size 1000, written as
//! `1000.0`), and signatures made here.

use std::collections::BTreeMap;

use super::fixture::*;
use crate::*;

const API_SHARDS: &str = "bundles/model.p256.api-shards1000.sig";

fn findings(report: &SignatureReport) -> Vec<Found> {
    report
        .findings
        .iter()
        .map(|f| (f.kind.name(), f.path.clone(), f.offset, f.end))
        .collect()
}

type Found = (String, String, Option<u64>, Option<u64>);

/// A finding's kind, path, offset and end.
fn finding(kind: &str, path: &str, offset: Option<u64>, end: Option<u64>) -> Found {
    (kind.to_string(), path.to_string(), offset, end)
}

#[test]
fn the_api_s_shard_bundle_verifies_and_every_change_is_found_by_its_range() {
    let dir = model();
    let m = dir.path().join("model");
    let key = public("p256-public.pem");
    let report = check_bundle(dir.path(), &fixtures().join(API_SHARDS), &key);
    assert!(
        report.valid && report.findings.is_empty(),
        "{:?}",
        report.findings
    );
    // empty.bin has no shard; layer0.bin (4,096 bytes) has 5, deep.bin (3,000) 3.
    assert_eq!(report.files, 7);
    assert_eq!(report.shard_size, Some(1000));
    assert_eq!(report.shards, Some(13));
    assert!(report.covered.contains(&"weights/layer0.bin".to_string()));

    let layer = m.join("weights/layer0.bin");
    let mut bytes = std::fs::read(&layer).unwrap();
    bytes[2500] ^= 1;
    std::fs::write(&layer, &bytes).unwrap();
    let report = check_bundle(dir.path(), &fixtures().join(API_SHARDS), &key);
    assert!(report.valid);
    assert_eq!(
        findings(&report),
        [finding(
            "signed_digest_mismatch",
            "weights/layer0.bin",
            Some(2000),
            Some(3000)
        )]
    );
    let f = &report.findings[0];
    assert_eq!(
        f.to_string(),
        format!(
            "weights/layer0.bin: signed_digest_mismatch at bytes 2000..3000: SHA-256 of shard 3 of 5 differs from the one the signature `model.sig` covers (expected fc5462a8c5feb984d5c9b74fb2722aeca1a354b1eae367d1563953c474784ed2, found {})",
            f.actual.as_deref().unwrap()
        )
    );
    bytes[10] ^= 1;
    bytes[4095] ^= 1;
    std::fs::write(&layer, &bytes).unwrap();
    let report = check_bundle(dir.path(), &fixtures().join(API_SHARDS), &key);
    assert_eq!(
        report.findings[0].message,
        "SHA-256 of 3 of 5 shards of 1000 bytes differs from the ones the signature `model.sig` covers (bytes 0..1000, 2000..3000, 4000..4096); the range shown is the first"
    );
    assert_eq!(report.findings[0].offset, Some(0));

    std::fs::write(m.join("weights/nested/deep.bin"), [0u8, 1].repeat(1000)).unwrap();
    std::fs::remove_file(m.join("README.md")).unwrap();
    std::fs::write(m.join("added.bin"), "new").unwrap();
    std::fs::write(m.join("added-empty.bin"), "").unwrap();
    std::fs::write(m.join("empty.bin"), "now holds bytes").unwrap();
    let report = check_bundle(dir.path(), &fixtures().join(API_SHARDS), &key);
    assert_eq!(
        findings(&report),
        [
            finding("signed_file_missing", "README.md", None, None),
            finding(
                "signed_digest_mismatch",
                "weights/layer0.bin",
                Some(0),
                Some(1000)
            ),
            finding(
                "signed_digest_mismatch",
                "weights/nested/deep.bin",
                Some(2000),
                None
            ),
            finding("unsigned_file", "added.bin", None, None),
            finding("unsigned_file", "empty.bin", None, None),
        ]
    );
    let resized = &report.findings[2];
    assert_eq!(resized.offset, Some(2000));
    assert_eq!(
        resized.message,
        "the file is 2000 bytes; the signature `model.sig` covers 3000 (3 shard(s) of 1000 bytes)"
    );
}

#[test]
fn our_shard_signatures_say_what_the_api_s_does_and_verify() {
    let dir = model();
    let m = dir.path().join("model");
    let sig = dir.path().join("model.sig");
    let method = Method::Shards { shard_size: 1000 };
    let key = private("p256-private.pem");
    let ours = sign_with(&m, &sig, &key, true, method, &BTreeMap::new()).unwrap();
    let theirs = Bundle::parse(&std::fs::read(fixtures().join(API_SHARDS)).unwrap()).unwrap();
    let mut theirs = Statement::parse(&theirs.payload).unwrap();
    theirs.ignore_paths.sort();
    assert_eq!(ours.statement, theirs);
    // Known whole-file digests do not stand in for shards.
    let known = BTreeMap::from([("README.md".to_string(), [9u8; 32])]);
    let again = sign_with(&m, &sig, &key, true, method, &known).unwrap();
    assert_eq!(again.bundle, ours.bundle, "RFC 6979, and the files read");
    write_bundle(&sig, &ours.bundle).unwrap();
    let report = check_bundle(dir.path(), &sig, &public("p256-public.pem"));
    assert!(
        report.valid && report.findings.is_empty(),
        "{:?}",
        report.findings
    );
    assert_eq!((report.files, report.shards), (7, Some(13)));

    // One file: its shards are named `.:start:end`, as model_signing names them.
    let one = sign_with(
        &m.join("weights/layer0.bin"),
        &sig,
        &key,
        false,
        Method::Shards { shard_size: 4000 },
        &BTreeMap::new(),
    )
    .unwrap();
    let labels: Vec<String> = one
        .statement
        .resources
        .iter()
        .map(Resource::label)
        .collect();
    assert_eq!(labels, [".:0:4000", ".:4000:4096"]);
    write_bundle(&sig, &one.bundle).unwrap();
    let report = check(
        &m.join("weights/layer0.bin"),
        &sig,
        "model.sig",
        &public("p256-public.pem"),
        &BTreeMap::new(),
    )
    .unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}
