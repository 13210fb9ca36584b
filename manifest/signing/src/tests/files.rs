//! One digest per file: against bundles the real `model_signing` 1.1.1 CLI wrote
//! (tests/fixtures/model_signing, see its README), over the same model directory rebuilt
//! here byte for byte.

use std::collections::BTreeMap;

use super::fixture::*;
use crate::*;

#[test]
fn bundles_of_the_real_cli_verify_for_every_curve_and_key_encoding() {
    let dir = model();
    for (bundle, key, curve) in [
        ("model.p256.sig", "p256-public.pem", "P-256"),
        ("model.p256-pkcs8key.sig", "p256-public.pem", "P-256"),
        ("model.p384.sig", "p384-public.pem", "P-384"),
        ("model.p521.sig", "p521-public.pem", "P-521"),
    ] {
        let report = check_bundle(
            dir.path(),
            &fixtures().join("bundles").join(bundle),
            &public(key),
        );
        assert!(report.valid, "{bundle}: {:?}", report.findings);
        assert!(
            report.findings.is_empty(),
            "{bundle}: {:?}",
            report.findings
        );
        assert_eq!(report.files, 8, "{bundle}");
        assert_eq!(report.curve, curve);
    }
    for name in [
        "POSITIVE-compact-sorted-payload-renamed-subject.sig",
        "POSITIVE-empty-hint-prints-warning.sig",
    ] {
        let report = check_bundle(
            dir.path(),
            &fixtures().join("negative").join(name),
            &public("p256-public.pem"),
        );
        assert!(
            report.valid && report.findings.is_empty(),
            "{name}: {:?}",
            report.findings
        );
    }
}

#[test]
fn key_hint_equals_model_signing_s() {
    // The hint model.p256.sig carries (expected-values.json of the fixture).
    assert_eq!(
        public("p256-public.pem").hint(),
        "83ab9ad01cd01796c780293eb0647c14b46c2af260d86553388d0a83e5dde670"
    );
    let key = private("p256-private.pem");
    assert_eq!(key.public_key().hint(), public("p256-public.pem").hint());
    assert_eq!(
        private("p256-private.pkcs8.pem").public_key().hint(),
        public("p256-public.pem").hint()
    );
}

#[test]
fn damaged_bundles_and_wrong_keys_are_findings() {
    let dir = model();
    let negative = |name: &str| {
        check_bundle(
            dir.path(),
            &fixtures().join("negative").join(name),
            &public("p256-public.pem"),
        )
    };
    for (name, message) in [
        (
            "tampered-sig.sig",
            "its signature does not match its content",
        ),
        (
            "tampered-payload.sig",
            "its signature does not match its content",
        ),
        ("wrong-subject-digest.sig", "its statement is inconsistent"),
        ("wrong-media-type.sig", "not a model_signing bundle"),
    ] {
        let report = negative(name);
        assert!(!report.valid, "{name}");
        assert_eq!(
            kinds(&report),
            [("signature_invalid".to_string(), "model.sig".to_string())],
            "{name}"
        );
        assert!(
            report.findings[0].message.contains(message),
            "{name}: {}",
            report.findings[0].message
        );
    }
    assert_eq!(
        kinds(&negative("missing-resource.sig")),
        [("unsigned_file".to_string(), "weights-extra.txt".to_string())]
    );
    assert_eq!(
        kinds(&negative("wrong-file-digest.sig")),
        [(
            "signed_digest_mismatch".to_string(),
            "README.md".to_string()
        )]
    );
    let other = check_bundle(
        dir.path(),
        &fixtures().join("bundles/model.p256.sig"),
        &public("other-p256-public.pem"),
    );
    assert!(
        other.findings[0]
            .message
            .starts_with("was made with another key"),
        "{:?}",
        other.findings
    );
}

#[test]
fn our_signatures_verify_are_deterministic_and_catch_every_change() {
    let dir = model();
    let m = dir.path().join("model");
    let sig = dir.path().join("model.sig");
    for (key, public_key) in [
        ("p256-private.pem", "p256-public.pem"),
        ("p384-private.pem", "p384-public.pem"),
        ("p521-private.pem", "p521-public.pem"),
    ] {
        let signed = sign_files(&m, &sig, &private(key), true, &BTreeMap::new()).unwrap();
        let again = sign_files(&m, &sig, &private(key), true, &BTreeMap::new()).unwrap();
        if !key.starts_with("p521") {
            assert_eq!(
                signed.bundle, again.bundle,
                "RFC 6979: same key, same bytes"
            );
        }
        assert_eq!(signed.statement, again.statement);
        write_bundle(&sig, &signed.bundle).unwrap();
        let report = check_bundle(dir.path(), &sig, &public(public_key));
        assert!(
            report.valid && report.findings.is_empty(),
            "{key}: {:?}",
            report.findings
        );
    }
    // The statement says what model_signing's does for the same directory.
    let ours = sign_files(
        &m,
        &sig,
        &private("p256-private.pem"),
        true,
        &BTreeMap::new(),
    )
    .unwrap();
    let theirs =
        Bundle::parse(&std::fs::read(fixtures().join("bundles/model.p256.sig")).unwrap()).unwrap();
    let mut theirs = Statement::parse(&theirs.payload).unwrap();
    theirs.ignore_paths.sort();
    assert_eq!(ours.statement, theirs);
    // Known digests are used as they are: a wrong one is what gets signed.
    let known = BTreeMap::from([("README.md".to_string(), [9u8; 32])]);
    let lied = sign_files(&m, &sig, &private("p256-private.pem"), true, &known).unwrap();
    assert!(
        lied.statement
            .resources
            .iter()
            .any(|r| r.digest == [9u8; 32])
    );

    write_bundle(&sig, &ours.bundle).unwrap();
    std::fs::write(m.join("README.md"), b"changed\n").unwrap();
    std::fs::write(m.join("new.bin"), b"new").unwrap();
    std::fs::remove_file(m.join("weights/nested/deep.bin")).unwrap();
    std::fs::write(m.join(".git"), b"ignored").unwrap();
    let report = check_bundle(dir.path(), &sig, &public("p256-public.pem"));
    assert_eq!(
        kinds(&report),
        [
            (
                "signed_digest_mismatch".to_string(),
                "README.md".to_string()
            ),
            (
                "signed_file_missing".to_string(),
                "weights/nested/deep.bin".to_string()
            ),
            ("unsigned_file".to_string(), "new.bin".to_string()),
        ]
    );
}

#[test]
fn a_signature_inside_the_directory_is_left_out_and_recorded() {
    let dir = model();
    let m = dir.path().join("model");
    std::fs::remove_file(m.join("link-to-config.json")).unwrap();
    let sig = m.join("model.sig");
    let signed = sign_files(
        &m,
        &sig,
        &private("p256-private.pem"),
        false,
        &BTreeMap::new(),
    )
    .unwrap();
    assert!(
        signed
            .statement
            .ignore_paths
            .contains(&"model.sig".to_string())
    );
    write_bundle(&sig, &signed.bundle).unwrap();
    let report = check(
        &m,
        &sig,
        "model.sig",
        &public("p256-public.pem"),
        &BTreeMap::new(),
    )
    .unwrap();
    assert!(
        report.valid && report.findings.is_empty(),
        "{:?}",
        report.findings
    );
    let err = sign_files(
        &dir.path().join("model"),
        &sig,
        &private("p256-private.pem"),
        false,
        &BTreeMap::new(),
    );
    assert!(err.is_ok());
    std::os::unix::fs::symlink("config.json", m.join("l")).unwrap();
    let err = sign_files(
        &m,
        &sig,
        &private("p256-private.pem"),
        false,
        &BTreeMap::new(),
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("`l` is a symlink"), "{err}");
}
