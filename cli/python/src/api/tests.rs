use super::*;
use shardsmith_cli::message;

fn dataset() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.bin"), vec![1u8; 5000]).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b.txt"), b"hello\n").unwrap();
    dir
}

#[test]
fn manifest_then_verify_clean_then_damaged() {
    let dir = dataset();
    let made = manifest(dir.path(), None, false, false, false).unwrap();
    assert_eq!(made["report"]["files"], 2);
    assert_eq!(made["report"]["bytes"], 5006);
    assert_eq!(made["files"][0][0], "a.bin");
    assert_eq!(made["files"][1][1], 6);
    assert!(dir.path().join("SHA256SUMS").exists());
    let root = made["report"]["root_sha256"].as_str().unwrap().to_string();

    let clean = verify(dir.path(), None, false, Some(&root.to_uppercase()), false).unwrap();
    assert_eq!(clean["report"]["ok"], true, "{clean}");
    assert_eq!(clean["report"]["root_sha256"], root.as_str());
    assert_eq!(clean["report"]["files_checked"], 2);
    assert_eq!(clean["texts"], json!([]));

    let mut bytes = std::fs::read(dir.path().join("a.bin")).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(dir.path().join("a.bin"), bytes).unwrap();
    std::fs::remove_file(dir.path().join("sub/b.txt")).unwrap();
    let bad = verify(dir.path(), None, false, None, false).unwrap();
    let report = &bad["report"];
    assert_eq!(report["ok"], false);
    assert_eq!(report["errors"], 2);
    let kinds: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("a.bin", "hash_mismatch"), ("sub/b.txt", "missing_file")]
    );
    let text = bad["texts"][0].as_str().unwrap();
    assert!(
        text.starts_with("a.bin: hash_mismatch at bytes 0..5000: "),
        "{text}"
    );
}

#[test]
fn verify_report_has_the_cli_keys() {
    let dir = dataset();
    let value = verify(dir.path(), None, false, None, true).unwrap();
    let keys: Vec<&String> = value["report"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "bytes_checked",
            "checked",
            "command",
            "documents",
            "errors",
            "files_checked",
            "findings",
            "manifest",
            "notes",
            "ok",
            "partial",
            "path",
            "root_sha256",
            "samples",
            "seconds",
            "signature",
            "tokens",
            "version",
            "warnings",
        ]
    );
    assert_eq!(value["report"]["ok"], true);
    assert_eq!(value["report"]["path"], dir.path().display().to_string());
}

/// The kind and the message of a refused call.
fn refused(result: Result<Value, Refusal>) -> (ErrorKind, String) {
    let refusal = result.unwrap_err();
    (refusal.kind, refusal.message)
}

#[test]
fn an_unfinished_run_is_refused_with_the_python_switch() {
    let dir = dataset();
    let state = dir.path().join(shardsmith_manifest::unfinished::STATE_DIR);
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("shard-000000.json"), b"{}").unwrap();
    let (kind, err) = refused(manifest(dir.path(), None, false, false, false));
    assert!(err.contains("or add accept_unfinished=True"), "{err}");
    assert_eq!(kind, ErrorKind::UnfinishedRun, "{err}");
    assert!(manifest(dir.path(), None, false, false, true).is_ok());
}

#[test]
fn what_the_cli_exits_2_with_is_refused_in_its_words_and_kind() {
    let dir = dataset();
    let missing = dir.path().join("nosuch");
    assert_eq!(
        refused(verify(&missing, None, false, None, false)),
        (
            ErrorKind::NotFound,
            format!("path `{}` does not exist", missing.display())
        )
    );
    let (kind, err) = refused(verify(dir.path(), None, false, Some("abc"), false));
    assert!(err.contains("a root digest is 64 hex digits"), "{err}");
    assert_eq!(kind, ErrorKind::Usage, "{err}");
    // A manifest that cannot be read stops the call; one that reads but does not parse
    // is a finding (`manifest_invalid`), as in the CLI.
    let (kind, err) = refused(verify(dir.path(), Some(&missing), false, None, false));
    assert!(
        err.starts_with(&format!("reading manifest `{}`: ", missing.display())),
        "{err}"
    );
    assert_eq!(kind, ErrorKind::Io, "{err}");
    std::fs::write(dir.path().join("manifest.json"), b"{not json").unwrap();
    let parsed = verify(dir.path(), None, false, None, false).unwrap();
    assert_eq!(parsed["report"]["findings"][1]["kind"], "manifest_invalid");
    let (kind, err) = refused(manifest(dir.path(), None, false, false, false));
    assert!(err.contains("already exists; pass force=True"), "{err}");
    assert_eq!(kind, ErrorKind::OutputConflict, "{err}");
    assert!(manifest(dir.path(), None, false, true, false).is_ok());
    assert_eq!(
        refused(manifest(
            &dir.path().join("a.bin"),
            None,
            false,
            false,
            false
        )),
        (
            ErrorKind::NotADirectory,
            format!(
                "`{}` is not a directory",
                dir.path().join("a.bin").display()
            )
        )
    );
    let (kind, err) = refused(audit(dir.path(), false));
    assert!(err.starts_with("no checkpoint found in `"), "{err}");
    assert_eq!(kind, ErrorKind::NotFound, "{err}");
    let (kind, err) = refused(verify(Path::new("s3://bucket/x"), None, false, None, false));
    assert!(err.contains("local paths only"), "{err}");
    assert_eq!(kind, ErrorKind::Unsupported, "{err}");
}

#[test]
fn message_joins_causes_once() {
    let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
    let err = shardsmith_manifest::Error::io("reading", "x", io);
    assert_eq!(message(&err.into()), "reading `x`: gone");
}
