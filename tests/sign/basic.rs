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

/// The model directory of tests/fixtures/model_signing (its README), made as `dir`: what
/// the committed bundles signed.
pub(super) fn fixture_model(t: &Tree, dir: &str) {
    t.file(&format!("{dir}/README.md"), "hello model\n")
        .file(
            &format!("{dir}/config.json"),
            "{\"hidden_size\": 4, \"layers\": 2}\n",
        )
        .file(
            &format!("{dir}/weights/layer0.bin"),
            (0..=255u8).cycle().take(4096).collect::<Vec<u8>>(),
        )
        .file(
            &format!("{dir}/weights/nested/deep.bin"),
            [0u8, 1].repeat(1500),
        )
        .file(&format!("{dir}/weights-extra.txt"), "extra\n")
        .file(&format!("{dir}/empty.bin"), "")
        .file(&format!("{dir}/.hidden"), "dotfile\n")
        .file(
            &format!("{dir}/.gitignore"),
            "# fixture file; ignored by model_signing by default (top-level .gitignore)\n",
        );
    std::fs::create_dir_all(t.join(&format!("{dir}/emptydir"))).unwrap();
    std::os::unix::fs::symlink("config.json", t.join(&format!("{dir}/link-to-config.json")))
        .unwrap();
}

#[test]
fn the_shard_bundle_model_signing_s_api_wrote_verifies_and_a_flipped_byte_is_named_by_its_shard() {
    let t = Tree::new();
    fixture_model(&t, "model");
    let bundle = signing_fixture("bundles/model.p256.api-shards1000.sig");
    let args = [
        "verify",
        &t.s("model"),
        "--signature",
        &bundle,
        "--public-key",
        &key("p256-public.pem"),
    ];
    let (code, report) = run_json(&args);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["signature"]["valid"], true);
    assert_eq!(report["signature"]["files"], 7, "empty.bin has no shard");
    assert_eq!(report["signature"]["shard_size"], 1000);
    assert_eq!(report["signature"]["shards"], 13);
    assert_eq!(report["checked"]["signature"], 7);

    let layer = t.join("model/weights/nested/deep.bin");
    let mut bytes = std::fs::read(&layer).unwrap();
    bytes[1234] ^= 0x80;
    std::fs::write(&layer, bytes).unwrap();
    let (code, report) = run_json(&args);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [(
            "signed_digest_mismatch".to_string(),
            "weights/nested/deep.bin".to_string(),
            Some(1000)
        )]
    );
    assert_eq!(report["findings"][0]["end"], 2000);
    let o = run(&args);
    assert!(
        text(&o.stdout).contains(&format!(
            "error: weights/nested/deep.bin: signed_digest_mismatch at bytes 1000..2000: SHA-256 of shard 2 of 3 differs from the one the signature `{bundle}` covers (expected "
        )),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn sign_with_shard_size_cuts_every_file_the_same_whatever_the_jobs() {
    let t = Tree::new();
    t.file("m/big.bin", noise(7, 300_000))
        .file("m/sub/small.txt", "small")
        .file("m/empty.bin", "");
    let sign = |jobs: &str, sig: &str| {
        run_json(&[
            "sign",
            &t.s("m"),
            "--private-key",
            &key("p256-private.pem"),
            "--signature",
            &t.s(sig),
            "--shard-size",
            "64KiB",
            "-j",
            jobs,
        ])
    };
    let (code, report) = sign("1", "one.sig");
    assert_eq!(code, 0, "{report}");
    // 300,000 bytes in shards of 65,536: 5; small.txt 1; empty.bin none.
    assert_eq!(report["shard_size"], 65536);
    assert_eq!(report["shards"], 6);
    assert_eq!(report["files"], 2);
    let (code, _) = sign("2", "two.sig");
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read(t.join("one.sig")).unwrap(),
        std::fs::read(t.join("two.sig")).unwrap(),
        "same bundle bytes at -j 1 and -j 2 (P-256 signatures are deterministic)"
    );
    let o = run(&[
        "sign",
        &t.s("m"),
        "--private-key",
        &key("p256-private.pem"),
        "--signature",
        &t.s("text.sig"),
        "--shard-size",
        "64KiB",
        "--no-checks",
    ]);
    assert!(
        text(&o.stdout).starts_with(&format!(
            "signed {}: 2 file(s) in 6 shard(s) of 65536 bytes with the P-256 key ",
            t.s("m")
        )),
        "{}",
        text(&o.stdout)
    );

    let verify = || {
        run_json(&[
            "verify",
            &t.s("m"),
            "--signature",
            &t.s("one.sig"),
            "--public-key",
            &key("p256-public.pem"),
        ])
    };
    let (code, report) = verify();
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["signature"]["shards"], 6);
    let big = t.join("m/big.bin");
    let mut bytes = std::fs::read(&big).unwrap();
    bytes[200_000] ^= 1;
    std::fs::write(&big, &bytes).unwrap();
    std::fs::write(t.join("m/added-empty.bin"), "").unwrap();
    let (code, report) = verify();
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [(
            "signed_digest_mismatch".to_string(),
            "big.bin".to_string(),
            Some(196_608)
        )]
    );
    assert_eq!(report["findings"][0]["end"], 262_144);
    bytes.truncate(250_000);
    std::fs::write(&big, &bytes).unwrap();
    let (_, report) = verify();
    assert_eq!(
        report["findings"][0]["message"],
        format!(
            "the file is 250000 bytes; the signature `{}` covers 300000 (5 shard(s) of 65536 bytes)",
            t.s("one.sig")
        )
    );
}

#[test]
fn shard_sizes_and_names_a_shard_signature_cannot_hold_exit_2() {
    let t = Tree::new();
    t.file("m/a.bin", "a");
    let sign = |size: &str| {
        run(&[
            "sign",
            &t.s("m"),
            "--private-key",
            &key("p256-private.pem"),
            "--signature",
            &t.s("s.sig"),
            "--shard-size",
            size,
        ])
    };
    let o = sign("0");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("invalid value '0' for '--shard-size <SIZE>': a shard holds at least 1 byte"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(sign("1x").status.code(), Some(2));
    t.file("m/epoch:1.bin", "b");
    let o = sign("1GB");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("error: `epoch:1.bin` cannot be signed: its name holds `:`"),
        "{}",
        text(&o.stderr)
    );
    assert!(!t.join("s.sig").exists());
}
