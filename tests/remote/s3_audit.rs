//! `audit s3://...`: a training run in a bucket gets the same survey as the same run on
//! local disk: checkpoints, their findings, the newest intact one, pointer problems and
//! leftovers, clean and after each kind of damage done through the server's backing
//! directory.

use std::path::Path;

use serde_json::Value;

use crate::checkpoint::basic::{truncate, zero};
use crate::remote::s3::S3;
use crate::util::*;

/// The parts of an audit report that must not depend on where the run is.
fn survey(report: &Value) -> Value {
    let mut r = report.clone();
    for key in ["run_dir", "resume_from", "seconds"] {
        r.as_object_mut().unwrap().remove(key);
    }
    for c in r["checkpoints"].as_array_mut().unwrap() {
        // Verified against the manifest in place (remote) or read whole with every
        // format check (local): what was read may differ.
        for key in ["bytes_checked", "files_checked"] {
            c.as_object_mut().unwrap().remove(key);
        }
    }
    r
}

/// Audits `run` locally and as `s3://runs/<name>` (a copy in the bucket) and checks
/// that both surveys agree; returns the exit code and the remote report.
fn both(s3: &S3, run: &Path, name: &str) -> (i32, Value) {
    let bucket = s3.bucket("runs");
    let _ = std::fs::remove_dir_all(bucket.join(name));
    copy_dir(run, &bucket.join(name));
    let (local_code, local) = run_json(&["audit", run.to_str().unwrap()]);
    let scratch = Tree::new();
    let url = format!("s3://runs/{name}");
    let (code, remote) = s3.json(&["audit", &url, "--scratch", scratch.path().to_str().unwrap()]);
    assert_eq!(code, local_code, "{remote:#}\n{local:#}");
    assert_eq!(survey(&remote), survey(&local), "{remote:#}\n{local:#}");
    assert_eq!(remote["run_dir"], url);
    if let Some(resume) = remote["resume_from"].as_str() {
        assert!(resume.starts_with(&url), "{remote}");
    }
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "every copy in the scratch directory is deleted"
    );
    (code, remote)
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_run_in_a_bucket_gets_the_findings_it_gets_on_disk() {
    let Some(s3) = S3::start() else { return };
    let model = checkpoint_fixture("plain/model.safetensors");
    let optim = checkpoint_fixture("plain/optimizer.pt");
    let dir = Tree::new();
    for step in [100, 200, 300] {
        dir.file(&format!("checkpoint-{step}/model.safetensors"), &model)
            .file(&format!("checkpoint-{step}/optimizer.pt"), &optim);
    }
    assert!(
        run(&["manifest", &dir.s("checkpoint-200")])
            .status
            .success()
    );
    dir.file("runs/events.out.tfevents", b"not a checkpoint");
    let (code, report) = both(&s3, dir.path(), "hf");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["newest_intact"], "checkpoint-300");
    assert_eq!(report["checkpoints"][1]["manifest"], "manifest.json");
    // checkpoint-200 is verified in place against its manifest, the others copied.
    let summary = text(&s3.run(&["audit", "s3://runs/hf"]).stdout);
    assert!(
        summary.contains("2 checkpoint(s) without a manifest copied to"),
        "{summary}"
    );

    // An interrupted save: only a temporary file in checkpoint-400.
    dir.file("checkpoint-400/.tmpQ3x9Za", &model[..4096]);
    let (code, report) = both(&s3, dir.path(), "hf");
    assert_eq!(code, 1);
    assert_eq!(report["newest_intact"], "checkpoint-300");
    std::fs::remove_dir_all(dir.join("checkpoint-400")).unwrap();

    // A zero-filled hole (no manifest: the torch CRC), a flipped byte under a manifest,
    // a truncated safetensors file, a deleted one.
    zero(&dir.join("checkpoint-300/optimizer.pt"), 20_000, 8);
    let path = dir.join("checkpoint-200/model.safetensors");
    let mut b = std::fs::read(&path).unwrap();
    b[30_000] ^= 0x10;
    std::fs::write(&path, b).unwrap();
    let (code, report) = both(&s3, dir.path(), "hf");
    assert_eq!(code, 1);
    assert_eq!(report["newest_intact"], "checkpoint-100");
    assert_eq!(
        report["checkpoints"][1]["findings"][0]["kind"],
        "hash_mismatch"
    );
    truncate(&dir.join("checkpoint-100/model.safetensors"), 1000);
    std::fs::remove_file(dir.join("checkpoint-200/optimizer.pt")).unwrap();
    let (code, report) = both(&s3, dir.path(), "hf");
    assert_eq!(code, 1);
    assert_eq!(report["newest_intact"], Value::Null);
    let kinds: Vec<_> = report["checkpoints"][1]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["hash_mismatch", "missing_file"]);
    assert!(!report["checkpoints"][0]["intact"].as_bool().unwrap());
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn deepspeed_megatron_and_single_file_runs_in_a_bucket() {
    let Some(s3) = S3::start() else { return };
    for fixture in ["deepspeed", "megatron"] {
        let run = crate::checkpoint::basic::copy(fixture);
        let (code, report) = both(&s3, run.path(), fixture);
        assert_eq!(code, 0, "{report:#}");
        // The pointer wrong: it names a checkpoint that is not there.
        let (pointer, value) = match fixture {
            "deepspeed" => ("latest", "global_step99"),
            _ => ("latest_checkpointed_iteration.txt", "20"),
        };
        run.file(pointer, value);
        let (code, report) = both(&s3, run.path(), fixture);
        assert_eq!(code, 1);
        assert_eq!(report["findings"][0]["kind"], "bad_pointer", "{report:#}");
    }
    let dir = Tree::new();
    let pt = checkpoint_fixture("plain/model.pt");
    dir.file("ckpt_1000.pt", &pt)
        .file("ckpt_2000.pt", &pt[..pt.len() / 2])
        .file("model", &pt)
        .file("ckpt_3000.pt.tmp", &pt[..100]);
    let (code, report) = both(&s3, dir.path(), "single");
    assert_eq!(code, 1);
    assert_eq!(report["newest_intact"], "ckpt_1000.pt");
    assert_eq!(
        report["checkpoints"].as_array().unwrap().len(),
        3,
        "{report:#}"
    );

    // Nothing there, a scratch directory that does not exist.
    let out = s3.run(&["audit", "s3://runs/none"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no checkpoint found"),
        "{}",
        text(&out.stderr)
    );
    let out = s3.run(&["audit", "s3://runs/single", "--scratch", "/nonexistent/x"]);
    assert_eq!(out.status.code(), Some(2));
}
