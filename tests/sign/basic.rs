//! `shardsmith sign` and `verify --signature` end to end (the model_signing interop both
//! ways is in `interop.rs`).

use crate::util::*;

fn key(name: &str) -> String {
    signing_fixture(&format!("keys/{name}"))
}

/// A packed dataset (`d/`) and a signature of it beside it (`d.sig`).
fn signed() -> Tree {
    let t = Tree::new();
    let o = run(&[
        "pack",
        samples().to_str().unwrap(),
        &t.s("d"),
        "--shard-size",
        "64KiB",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (code, report) = run_json(&[
        "sign",
        &t.s("d"),
        "--private-key",
        &key("p256-private.pem"),
        "--signature",
        &t.s("d.sig"),
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["signed"], true);
    // Two shards, manifest.json and SHA256SUMS: the manifest is signed too.
    assert_eq!(report["files"], 4, "{report}");
    assert_eq!(report["curve"], "P-256");
    t
}

fn verify_signed(t: &Tree, public: &str) -> (i32, serde_json::Value) {
    run_json(&[
        "verify",
        &t.s("d"),
        "--signature",
        &t.s("d.sig"),
        "--public-key",
        &key(public),
    ])
}

#[test]
fn a_signed_dataset_verifies_and_every_change_is_found() {
    let t = signed();
    let (code, report) = verify_signed(&t, "p256-public.pem");
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["signature"]["valid"], true);
    // The shards, as the manifest checks count them; the signature covers 4 files.
    assert_eq!(report["checked"]["signature"], 2);
    assert_eq!(report["checked"]["manifest"], 2);
    assert_eq!(report["signature"]["files"], 4);

    let (code, report) = verify_signed(&t, "other-p256-public.pem");
    assert_eq!(code, 1);
    assert_eq!(report["signature"]["valid"], false);
    assert_eq!(
        findings(&report),
        [("signature_invalid".to_string(), t.s("d.sig"), None)]
    );

    // Manifest and data replaced together: the manifest checks pass, the signature not.
    let shard = t.join("d/shard-000001.tar");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[600] ^= 1;
    std::fs::write(&shard, bytes).unwrap();
    let m = run(&["manifest", &t.s("d"), "--force"]);
    assert!(m.status.success(), "{}", text(&m.stderr));
    std::fs::write(t.join("d/extra.txt"), "new").unwrap();
    std::fs::remove_file(t.join("d/SHA256SUMS")).unwrap();
    let (code, report) = verify_signed(&t, "p256-public.pem");
    assert_eq!(code, 1, "{report}");
    let kinds: Vec<(String, String)> = findings(&report)
        .into_iter()
        .map(|(k, p, _)| (k, p))
        .collect();
    for want in [
        ("signed_digest_mismatch", "manifest.json"),
        ("signed_digest_mismatch", "shard-000001.tar"),
        ("signed_file_missing", "SHA256SUMS"),
        ("unsigned_file", "extra.txt"),
    ] {
        assert!(
            kinds.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} in {kinds:?}"
        );
    }
}

#[test]
fn sign_refuses_data_that_does_not_verify_unless_told() {
    let t = Tree::new();
    assert!(
        run(&["pack", samples().to_str().unwrap(), &t.s("d")])
            .status
            .success()
    );
    let shard = t.join("d/shard-000000.tar");
    let len = std::fs::metadata(&shard).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&shard)
        .unwrap()
        .set_len(len - 1024)
        .unwrap();
    let args = [
        "sign",
        &t.s("d"),
        "--private_key",
        &key("p384-private.pem"),
        "--signature",
        &t.s("d.sig"),
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1));
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("error: shard-000000.tar: size_mismatch"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(
            "FAILED: not signed: verification found 3 problem(s); fix them, or sign the files as they are with --no-checks\n"
        ),
        "{stdout}"
    );
    assert!(!t.join("d.sig").exists(), "nothing signed");
    let mut forced = args.to_vec();
    forced.push("--no-checks");
    let o = run(&forced);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (code, report) = run_json(&[
        "verify",
        &t.s("d"),
        "--signature",
        &t.s("d.sig"),
        "--public_key",
        &key("p384-public.pem"),
    ]);
    assert_eq!(code, 1, "the manifest still catches the damage");
    assert_eq!(report["signature"]["valid"], true);
}

#[test]
fn a_signature_inside_the_directory_is_not_signed_and_symlinks_need_consent() {
    let t = Tree::new();
    t.file("ckpt/model.safetensors", safetensors(3, 64))
        .file("ckpt/config.json", "{}");
    let (code, report) = run_json(&[
        "sign",
        &t.s("ckpt"),
        "--private-key",
        &key("p521-private.pem"),
        "--signature",
        &t.s("ckpt/model.sig"),
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["files"], 2);
    let (code, report) = run_json(&[
        "verify",
        &t.s("ckpt"),
        "--signature",
        &t.s("ckpt/model.sig"),
        "--public-key",
        &key("p521-public.pem"),
    ]);
    assert_eq!(code, 0, "{report}");
    std::os::unix::fs::symlink("config.json", t.join("ckpt/link.json")).unwrap();
    let o = run(&[
        "sign",
        &t.s("ckpt"),
        "--private-key",
        &key("p521-private.pem"),
        "--signature",
        &t.s("s.sig"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(
            "error: `link.json` is a symlink; model_signing signs symlinks only when asked"
        ),
        "{}",
        text(&o.stderr)
    );
    let o = run(&[
        "sign",
        &t.s("ckpt"),
        "--private-key",
        &key("p521-private.pem"),
        "--signature",
        &t.s("s.sig"),
        "--allow_symlinks",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn unusable_keys_and_arguments_exit_2_with_the_reason() {
    let t = Tree::new();
    t.file("d/a.bin", "a");
    let o = run(&[
        "sign",
        &t.s("d"),
        "--private-key",
        &key("p256-public.pem"),
        "--signature",
        &t.s("s.sig"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: key `{}` holds a public key; signing needs the private key\n",
            key("p256-public.pem")
        )
    );
    let o = run(&[
        "sign",
        &t.s("d"),
        "--private-key",
        &key("p256-private.encrypted-pkcs8.pem"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("is encrypted; write a decrypted copy"));
    let o = run(&["verify", &t.s("d"), "--signature", &t.s("s.sig")]);
    assert_eq!(o.status.code(), Some(2), "--signature needs --public-key");
    let o = run(&[
        "verify",
        &t.s("d"),
        "--signature",
        &t.s("missing.sig"),
        "--public-key",
        &key("p256-public.pem"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(&format!(
            "error: signature `{}` cannot be read",
            t.s("missing.sig")
        )),
        "{}",
        text(&o.stderr)
    );
}
