//! `shardsmith audit RUN_DIR`: the newest intact checkpoint named, broken ones and wrong
//! pointers reported, exit codes a resume script can branch on.

use std::path::Path;

use serde_json::Value;

use crate::checkpoint::basic::{copy, zero};
use crate::util::*;

fn audit(dir: &Path) -> (i32, Value) {
    run_json(&["audit", dir.to_str().unwrap()])
}

fn status(report: &Value) -> Vec<(String, bool)> {
    report["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["intact"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn s(name: &str, intact: bool) -> (String, bool) {
    (name.to_string(), intact)
}

#[test]
fn deepspeed_run_intact_then_a_missing_partition() {
    let t = copy("deepspeed");
    let (code, report) = audit(t.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        status(&report),
        [s("global_step5", true), s("global_step10", true)]
    );
    assert_eq!(report["newest_intact"], "global_step10");
    assert!(
        report["resume_from"]
            .as_str()
            .unwrap()
            .ends_with("global_step10")
    );

    std::fs::remove_file(t.join("global_step10/zero_pp_rank_0_mp_rank_00_optim_states.pt"))
        .unwrap();
    let (code, report) = audit(t.path());
    assert_eq!(code, 1);
    assert_eq!(
        status(&report),
        [s("global_step5", true), s("global_step10", false)]
    );
    assert_eq!(report["newest"], "global_step10");
    assert_eq!(report["newest_intact"], "global_step5");
    let pointer = &report["findings"][0];
    assert_eq!(
        (pointer["kind"].as_str(), pointer["path"].as_str()),
        (Some("bad_pointer"), Some("latest"))
    );
    assert!(
        pointer["message"]
            .as_str()
            .unwrap()
            .contains("global_step5")
    );
}

#[test]
fn megatron_tracker_ahead_of_the_data() {
    let t = copy("megatron");
    assert_eq!(audit(t.path()).0, 0);
    t.file("latest_checkpointed_iteration.txt", "20");
    let (code, report) = audit(t.path());
    assert_eq!(
        code, 1,
        "the newest checkpoint is intact but the tracker is wrong"
    );
    assert_eq!(report["newest_intact"], "iter_0000010");
    assert_eq!(report["findings"][0]["kind"], "bad_pointer");
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
}

#[test]
fn hf_style_run_with_an_interrupted_and_a_damaged_checkpoint() {
    let run_dir = Tree::new();
    let model = checkpoint_fixture("plain/model.safetensors");
    let optim = checkpoint_fixture("plain/optimizer.pt");
    for step in [100, 200, 300] {
        run_dir
            .file(&format!("checkpoint-{step}/model.safetensors"), &model)
            .file(&format!("checkpoint-{step}/optimizer.pt"), &optim);
    }
    // Save-time manifests make checkpoint-200 exactly verifiable.
    assert!(
        run(&["manifest", &run_dir.s("checkpoint-200")])
            .status
            .success()
    );
    // checkpoint-400: the save was killed, only safetensors' temp file is there.
    run_dir.file("checkpoint-400/.tmpQ3x9Za", &model[..4096]);
    run_dir.file("runs/events.out.tfevents", b"not a checkpoint");
    let (code, report) = audit(run_dir.path());
    assert_eq!(code, 1);
    assert_eq!(
        status(&report),
        [
            s("checkpoint-100", true),
            s("checkpoint-200", true),
            s("checkpoint-300", true),
            s("checkpoint-400", false)
        ]
    );
    assert_eq!(report["newest_intact"], "checkpoint-300");
    let incomplete = &report["checkpoints"][3]["findings"];
    assert!(
        incomplete
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "incomplete_save")
    );
    assert_eq!(report["checkpoints"][1]["manifest"], "manifest.json");

    // A flipped byte: checkpoint-300 has no manifest, the torch CRC catches it;
    // checkpoint-200 is exact through its manifest.
    zero(&run_dir.join("checkpoint-300/optimizer.pt"), 20_000, 8);
    let path = run_dir.join("checkpoint-200/model.safetensors");
    let mut b = std::fs::read(&path).unwrap();
    b[30_000] ^= 0x10;
    std::fs::write(&path, b).unwrap();
    std::fs::remove_dir_all(run_dir.join("checkpoint-400")).unwrap();
    let (code, report) = audit(run_dir.path());
    assert_eq!(code, 1);
    assert_eq!(
        status(&report),
        [
            s("checkpoint-100", true),
            s("checkpoint-200", false),
            s("checkpoint-300", false)
        ]
    );
    assert_eq!(report["newest_intact"], "checkpoint-100");
    let kinds: Vec<&str> = report["checkpoints"][1]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["hash_mismatch"]);
    let summary = text(&run(&["audit", run_dir.path().to_str().unwrap()]).stdout);
    assert!(summary.contains("checkpoint-200  BROKEN"), "{summary}");
    assert!(summary.contains("the newest intact one is"), "{summary}");
}

#[test]
fn single_file_checkpoints_a_latest_symlink_and_empty_runs() {
    let run_dir = Tree::new();
    let pt = checkpoint_fixture("plain/model.pt");
    run_dir
        .file("ckpt_1000.pt", &pt)
        .file("ckpt_2000.pt", &pt[..pt.len() / 2]);
    std::os::unix::fs::symlink("ckpt_2000.pt", run_dir.join("latest.pt")).unwrap();
    let (code, report) = audit(run_dir.path());
    assert_eq!(code, 1);
    assert_eq!(report["newest"], "ckpt_2000.pt");
    assert_eq!(report["newest_intact"], "ckpt_1000.pt");
    assert_eq!(
        status(&report).len(),
        2,
        "a symlink is a pointer, not a checkpoint"
    );
    let pointer = &report["findings"][0];
    assert_eq!(
        (pointer["kind"].as_str(), pointer["path"].as_str()),
        (Some("bad_pointer"), Some("latest.pt"))
    );

    let empty = Tree::new();
    let out = run(&["audit", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no checkpoint found"));
    let out = run(&["audit", empty.join("missing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}
