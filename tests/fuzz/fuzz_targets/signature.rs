//! Signature bundles (`verify --signature`): the bundle JSON, the in-toto statement in
//! it, PEM keys, and the whole check of a bundle against a directory with a real key.
//! Random bytes cannot carry a valid signature, so the statement parser is also fed the
//! input directly.
#![no_main]
use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use shardsmith_signing::{Bundle, PrivateKey, PublicKey, Statement};

const KEY: &str = include_str!("../../fixtures/model_signing/keys/p256-public.pem");

fuzz_target!(|data: &[u8]| {
    if let Ok(bundle) = Bundle::parse(data) {
        let _ = Statement::parse(&bundle.payload);
    }
    let _ = Statement::parse(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = PublicKey::from_pem(text);
        let _ = PrivateKey::from_pem(text);
    }
    let root = shardsmith_fuzz::scratch();
    shardsmith_fuzz::write(&root, "d/a.bin", b"abc");
    shardsmith_fuzz::write(&root, "d/sub/b.txt", b"");
    shardsmith_fuzz::write(&root, "model.sig", data);
    let key = PublicKey::from_pem(KEY).expect("the fixture key loads");
    let report = shardsmith_signing::check(
        &root.join("d"),
        &root.join("model.sig"),
        "model.sig",
        &key,
        &BTreeMap::new(),
    )
    .expect("the bundle and the files can be read");
    let _ = serde_json::to_string(&report);
});
