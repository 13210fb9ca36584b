//! What the signature tests share: the fixtures, the model directory they were made
//! over, signing and checking with the defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::*;

pub(super) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/model_signing")
}

pub(super) fn public(name: &str) -> PublicKey {
    PublicKey::from_pem(&std::fs::read_to_string(fixtures().join("keys").join(name)).unwrap())
        .unwrap()
}

pub(super) fn private(name: &str) -> PrivateKey {
    PrivateKey::from_pem(&std::fs::read_to_string(fixtures().join("keys").join(name)).unwrap())
        .unwrap()
}

/// The fixture's `model/` directory (its README: make_model.sh).
pub(super) fn model() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("model");
    std::fs::create_dir_all(m.join("weights/nested")).unwrap();
    std::fs::create_dir_all(m.join("emptydir")).unwrap();
    let files: [(&str, Vec<u8>); 8] = [
        ("README.md", b"hello model\n".to_vec()),
        (
            "config.json",
            b"{\"hidden_size\": 4, \"layers\": 2}\n".to_vec(),
        ),
        (
            "weights/layer0.bin",
            (0..=255u8).cycle().take(4096).collect(),
        ),
        ("weights/nested/deep.bin", [0u8, 1].repeat(1500)),
        ("weights-extra.txt", b"extra\n".to_vec()),
        ("empty.bin", Vec::new()),
        (".hidden", b"dotfile\n".to_vec()),
        (
            ".gitignore",
            b"# fixture file; ignored by model_signing by default (top-level .gitignore)\n"
                .to_vec(),
        ),
    ];
    for (rel, data) in files {
        std::fs::write(m.join(rel), data).unwrap();
    }
    std::os::unix::fs::symlink("config.json", m.join("link-to-config.json")).unwrap();
    dir
}

/// Signs with method `method`, no progress shown.
pub(super) fn sign_with(
    path: &Path,
    signature: &Path,
    key: &PrivateKey,
    allow_symlinks: bool,
    method: Method,
    known: &BTreeMap<String, [u8; 32]>,
) -> Result<Signed> {
    sign(
        path,
        signature,
        key,
        &SignOptions {
            allow_symlinks,
            method,
            known,
            progress_total: &|_| {},
            progress: &|_| {},
        },
    )
}

/// Signs one digest per file.
pub(super) fn sign_files(
    path: &Path,
    signature: &Path,
    key: &PrivateKey,
    allow_symlinks: bool,
    known: &BTreeMap<String, [u8; 32]>,
) -> Result<Signed> {
    sign_with(path, signature, key, allow_symlinks, Method::Files, known)
}

pub(super) fn check_bundle(dir: &Path, bundle: &Path, key: &PublicKey) -> SignatureReport {
    check(
        &dir.join("model"),
        bundle,
        "model.sig",
        key,
        &BTreeMap::new(),
    )
    .unwrap()
}

pub(super) fn kinds(report: &SignatureReport) -> Vec<(String, String)> {
    report
        .findings
        .iter()
        .map(|f| (f.kind.name(), f.path.clone()))
        .collect()
}
