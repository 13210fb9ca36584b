//! Signatures against the real OpenSSF Model Signing CLI (`model_signing` 1.1.1, key
//! method), both ways: bundles `shardsmith sign` writes verify with `model_signing
//! verify key`, and bundles `model_signing sign key` writes verify with `shardsmith
//! verify --signature`; damage is caught by both. Needs `SHARDSMITH_MODEL_SIGNING`
//! (tests/run_all.sh sets it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::*;

fn model_signing() -> Option<PathBuf> {
    server_bin("SHARDSMITH_MODEL_SIGNING", "signing env")
}

fn key(name: &str) -> String {
    signing_fixture(&format!("keys/{name}"))
}

fn ms(tool: &Path, args: &[&str], cwd: &Path) -> Output {
    Command::new(tool)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// A checkpoint directory with what trips naive implementations: subdirectories, a
/// hidden file, an empty file, a non-ASCII name, `w/x` beside `w-x` (component order),
/// and a top-level `.gitignore` both tools leave out.
fn checkpoint() -> Tree {
    let t = Tree::new();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/checkpoints/deepspeed"),
        &t.join("ckpt"),
    );
    t.file("ckpt/.hidden", "h")
        .file("ckpt/empty.bin", "")
        .file("ckpt/notes/café.txt", "é")
        .file("ckpt/w/x.bin", noise(1, 5000))
        .file("ckpt/w-x.bin", noise(2, 70))
        .file("ckpt/.gitignore", "*.tmp\n");
    t
}

#[test]
#[ignore = "needs the signing env: SHARDSMITH_MODEL_SIGNING (tests/setup.sh)"]
fn model_signing_verifies_what_shardsmith_signs() {
    let Some(tool) = model_signing() else { return };
    let t = checkpoint();
    for curve in ["p256", "p384", "p521"] {
        let sig = t.s(&format!("{curve}.sig"));
        let o = run(&[
            "sign",
            &t.s("ckpt"),
            "--private-key",
            &key(&format!("{curve}-private.pem")),
            "--signature",
            &sig,
        ]);
        assert!(o.status.success(), "{curve}: {}", text(&o.stderr));
        let public = key(&format!("{curve}-public.pem"));
        let v = ms(
            &tool,
            &[
                "verify",
                "key",
                "ckpt",
                "--signature",
                &sig,
                "--public_key",
                &public,
            ],
            t.path(),
        );
        assert!(
            v.status.success() && text(&v.stdout).contains("Verification succeeded"),
            "{curve}: {}{}",
            text(&v.stdout),
            text(&v.stderr)
        );
    }
    // Damage after signing: model_signing finds it in our bundle.
    std::fs::write(t.join("ckpt/w-x.bin"), "changed").unwrap();
    let v = ms(
        &tool,
        &[
            "verify",
            "key",
            "ckpt",
            "--signature",
            &t.s("p256.sig"),
            "--public_key",
            &key("p256-public.pem"),
        ],
        t.path(),
    );
    assert_eq!(v.status.code(), Some(1));
    assert!(
        text(&v.stderr).contains("Hash mismatch for 'w-x.bin'"),
        "{}",
        text(&v.stderr)
    );
    // A signature inside the directory, at model_signing's default place.
    let inside = checkpoint();
    let o = Command::new(bin())
        .args(["sign", ".", "--private-key", &key("p256-private.pem")])
        .current_dir(inside.join("ckpt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v = ms(
        &tool,
        &[
            "verify",
            "key",
            ".",
            "--signature",
            "model.sig",
            "--public_key",
            &key("p256-public.pem"),
        ],
        &inside.join("ckpt"),
    );
    assert!(v.status.success(), "{}{}", text(&v.stdout), text(&v.stderr));
}

#[test]
#[ignore = "needs the signing env: SHARDSMITH_MODEL_SIGNING (tests/setup.sh)"]
fn shardsmith_verifies_what_model_signing_signs() {
    let Some(tool) = model_signing() else { return };
    let t = checkpoint();
    for curve in ["p256", "p384", "p521"] {
        let sig = t.s(&format!("ms-{curve}.sig"));
        let o = ms(
            &tool,
            &[
                "sign",
                "key",
                "ckpt",
                "--private_key",
                &key(&format!("{curve}-private.pem")),
                "--signature",
                &sig,
            ],
            t.path(),
        );
        assert!(o.status.success(), "{curve}: {}", text(&o.stderr));
        let (code, report) = run_json(&[
            "verify",
            &t.s("ckpt"),
            "--signature",
            &sig,
            "--public_key",
            &key(&format!("{curve}-public.pem")),
        ]);
        assert_eq!(code, 0, "{curve}: {report}");
        assert_eq!(report["signature"]["valid"], true);
        assert_eq!(report["signature"]["files"], 12, "{report}");
    }
    std::fs::write(t.join("ckpt/notes/café.txt"), "e").unwrap();
    std::fs::remove_file(t.join("ckpt/empty.bin")).unwrap();
    std::fs::write(t.join("ckpt/added.bin"), "new").unwrap();
    let (code, report) = run_json(&[
        "verify",
        &t.s("ckpt"),
        "--signature",
        &t.s("ms-p256.sig"),
        "--public-key",
        &key("p256-public.pem"),
    ]);
    assert_eq!(code, 1, "{report}");
    let kinds: Vec<(String, String)> = findings(&report)
        .into_iter()
        .map(|(k, p, _)| (k, p))
        .collect();
    assert_eq!(
        kinds,
        [
            ("unsigned_file".to_string(), "added.bin".to_string()),
            ("signed_file_missing".to_string(), "empty.bin".to_string()),
            (
                "signed_digest_mismatch".to_string(),
                "notes/café.txt".to_string()
            ),
        ]
    );
    let (code, report) = run_json(&[
        "verify",
        &t.s("ckpt"),
        "--signature",
        &t.s("ms-p256.sig"),
        "--public-key",
        &key("other-p256-public.pem"),
    ]);
    assert_eq!(code, 1);
    assert_eq!(report["signature"]["valid"], false);
}
