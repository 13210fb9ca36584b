//! Every report prints as a `serde_json::Value` of it would: keys in alphabetical order
//! at every depth, numbers of the same type. A field declared out of order, or a library
//! type embedded without [`super::sorted::sorted`], fails here.

use serde::Serialize;
use shardsmith_checkpoint::audit::CheckpointStatus;
use shardsmith_checkpoint::hfcache::{RepoStatus, SnapshotStatus};
use shardsmith_manifest::verify::Coverage;
use shardsmith_manifest::{Finding, FindingKind, Skipped};
use shardsmith_signing::SignatureReport;

use super::*;

/// Prints `report` directly and through a `Value`, and checks both are the same text.
fn same_as_value(report: &impl Serialize) {
    let direct = serde_json::to_string_pretty(report).unwrap();
    let via_value = serde_json::to_string_pretty(&serde_json::to_value(report).unwrap()).unwrap();
    assert_eq!(direct, via_value);
}

fn finding() -> Finding {
    let mut f = Finding::error(FindingKind::HashMismatch, "a.tar", "SHA-256 differs");
    f.offset = Some(0);
    f.end = Some(37);
    f.expected = Some("5ea3".into());
    f.actual = Some("2f20".into());
    f
}

fn skipped() -> Vec<Skipped> {
    vec![Skipped {
        path: "link".into(),
        reason: "has no extension".into(),
    }]
}

#[test]
fn list_prints_in_key_order() {
    same_as_value(&List {
        bytes: 10,
        command: "list",
        files: 2,
        input: "s3://raw/images".into(),
        list: "files.tsv".into(),
        seconds: 0.5,
        skipped: &skipped(),
        version: VERSION,
    });
}

#[test]
fn pack_and_tokenize_print_in_key_order() {
    let skipped = skipped();
    let warnings = vec!["sample `a` is large".to_string()];
    same_as_value(&Pack {
        already_complete: false,
        command: "pack",
        format: Some("webdataset"),
        input_bytes: Some(10),
        input_files: None,
        manifest: "manifest.json",
        output: "shards".into(),
        output_bytes: 20,
        root_sha256: "00",
        samples: Some(3),
        seconds: 1.5,
        shard_pattern: "shard-000000.tar".into(),
        shards: 1,
        shards_resumed: 0,
        shards_written: 1,
        skipped: &skipped,
        duplicates: None,
        task: Some(PackTask {
            count: 2,
            index: 1,
            plans: [3, 6],
            source: "--task-index 1 --task-count 2",
            total_plans: 12,
        }),
        version: VERSION,
        warnings: &warnings,
    });
    let dtype = serde_json::json!("uint16");
    let eod = serde_json::json!(50256);
    same_as_value(&Tokenize {
        already_complete: false,
        command: "tokenize",
        documents: Some(300),
        dtype: Some(&dtype),
        eod_id: Some(&eod),
        file_pattern: "tokens_{000000..000008}.bin".into(),
        files: 18,
        format: Some("megatron"),
        input_bytes: Some(89989),
        input_bytes_read: 89989,
        input_files: None,
        manifest: "manifest.json",
        output: "tokens".into(),
        output_bytes: 39662,
        root_sha256: "00",
        seconds: 3.0,
        shards_resumed: 0,
        shards_written: 9,
        skipped: &skipped,
        skipped_total: 1,
        duplicates: None,
        tokenizer: "r50k_base",
        tokens: Some(16642),
        version: VERSION,
        vocab_size: 50257,
    });
}

#[test]
fn manifest_merge_and_sign_print_in_key_order() {
    let skipped = skipped();
    let findings = vec![finding()];
    let parts = vec!["0".to_string(), "1".to_string()];
    same_as_value(&Manifest {
        bytes: 1,
        command: "manifest",
        files: 1,
        manifest: "raw/manifest.json".into(),
        root_sha256: "00",
        samples: None,
        seconds: 0.25,
        skipped: &skipped,
        tensors: Some(3),
        version: VERSION,
        warnings: &findings,
    });
    same_as_value(&Merge {
        bytes: 1,
        command: "merge",
        files: 9,
        index: true,
        output: "parts".into(),
        parts: &parts,
        root_sha256: "00",
        samples: Some(5),
        tasks: 0,
        renamed: 0,
        version: VERSION,
    });
    same_as_value(&Sign {
        bytes_checked: None,
        command: "sign",
        curve: "P-256",
        files: 5,
        key_hint: "ed6f".into(),
        path: "model".into(),
        seconds: 0.5,
        shard_size: Some(1_000_000_000),
        shards: Some(3),
        signature: "model.sig".into(),
        signed: true,
        subject_sha256: "00".into(),
        version: VERSION,
    });
    same_as_value(&SignRefused {
        command: "sign",
        errors: 1,
        findings: &findings,
        path: "model".into(),
        signed: false,
        version: VERSION,
    });
}

#[test]
fn verify_and_audit_print_in_key_order() {
    let findings = vec![finding()];
    let notes = vec!["no manifest".to_string()];
    let checked = Coverage {
        unchecked: 1,
        unchecked_examples: vec!["config.json".into()],
        ..Coverage::default()
    };
    let signature = SignatureReport {
        valid: true,
        curve: "P-256".into(),
        key_hint: "ed6f".into(),
        files: 5,
        shard_size: Some(1000),
        shards: Some(13),
        findings: findings.clone(),
        notes: notes.clone(),
        ..SignatureReport::default()
    };
    let partial = [shardsmith_manifest::verify::CheckedRange {
        path: "model.bin".into(),
        start: 64 << 20,
        end: 128 << 20,
        first_chunk: 1,
        last_chunk: 1,
        chunks: 17,
        chunk_size: 64 << 20,
    }];
    for (signature, partial) in [(Some(&signature), None), (None, Some(&partial[..]))] {
        same_as_value(&Verify {
            bytes_checked: 1,
            checked: &checked,
            command: "verify",
            documents: 0,
            errors: 1,
            files_checked: 1,
            findings: &findings,
            manifest: None,
            notes: &notes,
            ok: false,
            partial,
            path: "ckpt".into(),
            root_sha256: Some("00"),
            samples: 0,
            seconds: 0.01,
            signature,
            tokens: 0,
            version: VERSION,
            warnings: 0,
        });
    }
    let checkpoints = vec![CheckpointStatus {
        name: "global_step10".into(),
        step: Some(10),
        intact: false,
        errors: 1,
        warnings: 0,
        files_checked: 3,
        bytes_checked: 73385,
        manifest: None,
        findings: findings.clone(),
    }];
    same_as_value(&Audit {
        bytes_checked: 73385,
        checkpoints: &checkpoints,
        command: "audit",
        findings: &findings,
        newest: Some("global_step10"),
        newest_intact: None,
        ok: false,
        resume_from: None,
        run_dir: "checkpoints".into(),
        seconds: 0.002,
        version: VERSION,
    });
    let repos = vec![RepoStatus {
        kind: "model".into(),
        repo: "acme/tiny".into(),
        dir: "models--acme--tiny".into(),
        snapshots: vec![SnapshotStatus {
            commit: "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432".into(),
            refs: vec!["main".into()],
            files: 2,
            intact: false,
            errors: 1,
            warnings: 0,
            findings: findings.clone(),
        }],
        findings: findings.clone(),
    }];
    same_as_value(&HfCacheAudit {
        bytes_checked: 50,
        command: "audit",
        findings: findings.clone(),
        ok: false,
        path: "hub".into(),
        repos: &repos,
        seconds: 0.001,
        version: VERSION,
    });
}

#[test]
fn the_error_object_prints_in_key_order() {
    same_as_value(&Error {
        command: "audit",
        error: ErrorDetail {
            hint: None,
            kind: shardsmith_manifest::ErrorKind::NotFound,
            message: "`nosuch` does not exist".into(),
            path: Some("nosuch".into()),
        },
        exit_code: 2,
        version: VERSION,
    });
}

#[test]
fn diff_prints_in_key_order() {
    use shardsmith_checkpoint::tensors::diff::{Change, Changed, EntryReport, TensorInfo};
    use shardsmith_checkpoint::tensors::{Entry, ValueDiff};
    let entry = |name: &str, shown: &str| Entry {
        name: name.into(),
        shown: shown.into(),
        digest: Some(shown.len() as u64),
        file: "a.pt".into(),
    };
    let info = |name: &str| TensorInfo {
        name: name.into(),
        dtype: "F32".into(),
        shape: vec![2, 3],
        file: "model.safetensors".into(),
    };
    let changed = Changed {
        a: info("model.w"),
        b: info("w"),
        change: Change::Data(Some(ValueDiff {
            elements: 6,
            by_value: true,
            differing: 1,
            first: Some(4),
            max_abs: 0.5,
            max_rel: 0.25,
            non_finite: 0,
            bit_only: 0,
        })),
    };
    same_as_value(&Diff {
        a: "a.pt".into(),
        b: "b.safetensors".into(),
        bytes: 24,
        changed: vec![(&changed).into()],
        command: "diff",
        entries: (&EntryReport {
            same: 1,
            changed: vec![(entry("step", "5"), entry("step", "6"))],
            not_compared: vec![],
            only_a: vec![entry("lr", "0.001")],
            only_b: vec![],
        })
            .into(),
        identical: false,
        only_a: vec![(&info("x")).into()],
        only_b: vec![],
        same: 2,
        seconds: 0.5,
        version: VERSION,
    });
}

#[test]
fn ls_stats_and_task_reports_print_in_key_order() {
    let fields = vec!["cls".to_string(), "jpg".to_string()];
    same_as_value(&LsShards {
        command: "ls",
        kind: "webdataset",
        shards: vec![ShardRow {
            bytes: 10240,
            fields,
            first_key: "a",
            last_key: "b",
            name: "shard-000000.tar",
            samples: 2,
        }],
        skipped: 0,
        totals: ShardTotals {
            bytes: 10240,
            samples: 2,
            shards: 1,
        },
        version: VERSION,
    });
    same_as_value(&LsSamples {
        command: "ls",
        kind: "mds",
        samples: vec![SampleRow {
            fields: [("txt", 5), ("cls", 1)].into_iter().collect(),
            key: "a",
            shard: "shard.00000.mds",
        }],
        skipped: 1,
        version: VERSION,
    });
    same_as_value(&LsTokens {
        command: "ls",
        files: vec![TokenFileRow {
            bytes: 8,
            documents: None,
            dtype: "uint16",
            format: "nanogpt",
            path: "train.bin",
            tokens: 4,
        }],
        kind: "tokens",
        version: VERSION,
    });
    same_as_value(&LsCheckpoint {
        command: "ls",
        kind: "checkpoint",
        tensors: vec![TensorRow {
            bytes: 16,
            dtype: "F32",
            file: "model.safetensors",
            name: "w",
            shape: &[2, 2],
        }],
        version: VERSION,
    });
    let stat = FieldStats {
        bytes: 6,
        max: 5,
        median: 1,
        min: 1,
        p99: 5,
        samples: 2,
    };
    same_as_value(&Stats {
        bytes: 6,
        command: "stats",
        duplicate_contents: None,
        duplicate_keys: DuplicateKeys {
            count: 1,
            first: &["a".to_string()],
            repeats: 1,
        },
        fields: [("txt", stat)].into_iter().collect(),
        kind: "parquet",
        samples: 2,
        shards: 1,
        skipped: 0,
        version: VERSION,
    });
    same_as_value(&TokenizeTask {
        already_complete: false,
        command: "tokenize",
        documents: 3,
        files_resumed: 0,
        files_written: 1,
        input_files: Some([0, 2]),
        seconds: 0.5,
        task: 1,
        task_count: 4,
        task_source: "--task-index 1 --task-count 4",
        tokens: 99,
        version: VERSION,
    });
}
