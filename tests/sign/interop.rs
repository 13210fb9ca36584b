//! Signatures against the real OpenSSF Model Signing CLI (`model_signing` 1.1.1, key
//! method), both ways: bundles `shardsmith sign` writes verify with `model_signing
//! verify key`, and bundles `model_signing sign key` writes verify with `shardsmith
//! verify --signature`; damage is caught by both. Shards (`sign --shard-size`) both
//! ways through model_signing's Python API, which is where 1.1.1 has them (its CLI
//! verifies one digest per file only). Needs `SHARDSMITH_MODEL_SIGNING` (tests/run_all.sh
//! sets it).

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

/// Runs `tests/interop/model_signing_shards.py ARGS` with the signing env's Python:
/// model_signing's shard serialization through its API (its CLI has none).
fn ms_api(tool: &Path, args: &[&str], cwd: &Path) -> Output {
    Command::new(tool.with_file_name("python"))
        .arg(crate::interop::interop_dir().join("model_signing_shards.py"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

#[test]
#[ignore = "needs the signing env: SHARDSMITH_MODEL_SIGNING (tests/setup.sh)"]
fn shard_signatures_verify_both_ways_and_a_flipped_byte_fails_both() {
    let Some(tool) = model_signing() else { return };
    let t = checkpoint();
    t.file("ckpt/big.bin", noise(3, 3_000_000));
    let public = key("p256-public.pem");
    let private = key("p256-private.pem");
    let o = run(&[
        "sign",
        &t.s("ckpt"),
        "--private-key",
        &private,
        "--signature",
        &t.s("ours.sig"),
        "--shard-size",
        "64KiB",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // model_signing reads method and shard size from our bundle and agrees.
    let v = ms_api(
        &tool,
        &["verify", "ckpt", &t.s("ours.sig"), &public],
        t.path(),
    );
    assert!(
        v.status.success() && text(&v.stdout).contains("Verification succeeded"),
        "{}{}",
        text(&v.stdout),
        text(&v.stderr)
    );
    // Its CLI hashes one digest per file whatever the bundle says: no shards bundle, its
    // API's own included, verifies there (model_signing 1.1.1).
    let v = ms(
        &tool,
        &[
            "verify",
            "key",
            "ckpt",
            "--signature",
            &t.s("ours.sig"),
            "--public_key",
            &public,
        ],
        t.path(),
    );
    assert_eq!(v.status.code(), Some(1));
    assert!(
        text(&v.stderr).contains("Missing files in model 'ckpt': .hidden:0:1, big.bin:0:65536"),
        "{}",
        text(&v.stderr)
    );
    // model_signing's API signs (its bundle says "shard_size": 65536.0); we verify.
    let o = ms_api(
        &tool,
        &["sign", "ckpt", &t.s("theirs.sig"), &private, "65536"],
        t.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let verify = |sig: &str| {
        run_json(&[
            "verify",
            &t.s("ckpt"),
            "--signature",
            &t.s(sig),
            "--public-key",
            &public,
        ])
    };
    let (code, theirs) = verify("theirs.sig");
    assert_eq!(code, 0, "{theirs}");
    assert_eq!(theirs["signature"]["shard_size"], 65536);
    let (code, ours) = verify("ours.sig");
    assert_eq!(code, 0, "{ours}");
    // big.bin: 46 shards; 11 more files of one shard each; empty.bin none.
    assert_eq!(theirs["signature"]["shards"], 57);
    assert_eq!(ours["signature"]["shards"], 57);

    // One byte flipped in the middle of the 3 MB file: both tools fail, on shard 16.
    let big = t.join("ckpt/big.bin");
    let mut bytes = std::fs::read(&big).unwrap();
    bytes[1_000_000] ^= 0x01;
    std::fs::write(&big, bytes).unwrap();
    let v = ms_api(
        &tool,
        &["verify", "ckpt", &t.s("ours.sig"), &public],
        t.path(),
    );
    assert_eq!(v.status.code(), Some(1), "{}", text(&v.stdout));
    assert!(
        text(&v.stderr).contains("Hash mismatch for 'big.bin:983040:1048576'"),
        "{}",
        text(&v.stderr)
    );
    for sig in ["ours.sig", "theirs.sig"] {
        let (code, report) = verify(sig);
        assert_eq!(code, 1, "{sig}: {report}");
        assert_eq!(
            findings(&report),
            [(
                "signed_digest_mismatch".to_string(),
                "big.bin".to_string(),
                Some(983_040)
            )],
            "{sig}"
        );
        assert_eq!(report["findings"][0]["end"], 1_048_576, "{sig}");
    }
}

#[test]
#[ignore = "needs the signing env: SHARDSMITH_MODEL_SIGNING (tests/setup.sh)"]
fn model_signing_verifies_our_shards_of_the_fixture_model_and_of_one_file() {
    let Some(tool) = model_signing() else { return };
    let t = Tree::new();
    super::basic::fixture_model(&t, "model");
    let o = run(&[
        "sign",
        &t.s("model"),
        "--private-key",
        &key("p384-private.pem"),
        "--signature",
        &t.s("model.sig"),
        "--allow-symlinks",
        "--shard-size",
        "1000",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The model has a symlink: model_signing's guess leaves allow_symlinks off, so the
    // shard serialization is set explicitly, symlinks allowed.
    let v = ms_api(
        &tool,
        &[
            "verify",
            "model",
            &t.s("model.sig"),
            &key("p384-public.pem"),
            "1000",
        ],
        t.path(),
    );
    assert!(v.status.success(), "{}{}", text(&v.stdout), text(&v.stderr));
    // One file signed alone: its shards are `.:start:end` on both sides.
    t.file("one.bin", noise(5, 2_500_000));
    let o = run(&[
        "sign",
        &t.s("one.bin"),
        "--private-key",
        &key("p256-private.pem"),
        "--signature",
        &t.s("one.sig"),
        "--shard-size",
        "100k",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v = ms_api(
        &tool,
        &[
            "verify",
            "one.bin",
            &t.s("one.sig"),
            &key("p256-public.pem"),
        ],
        t.path(),
    );
    assert!(v.status.success(), "{}{}", text(&v.stdout), text(&v.stderr));
}
