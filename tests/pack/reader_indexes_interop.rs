//! The real DALI 2.4 and Megatron-Energon 7.4.1 read shards through the indexes `pack
//! --index dali|energon` writes (every sample, key and bytes, the count), and `index --for
//! dali,energon` over shards written by `webdataset.ShardWriter` writes what DALI's
//! `wds2idx` and `energon prepare` write (see `tests/interop/check_dali_index.py` and
//! `check_energon_index.py`; issue 33).
//!
//! Needs `SHARDSMITH_TORCH_PYTHON` (the torch env holds DALI and Energon), as
//! `tests/interop.rs`: without it the test says so, and fails under CI.

use std::path::Path;

use crate::interop::{run_torch, torch_python};
use crate::util::*;

/// Runs `tests/interop/SCRIPT ARGS...` in the torch env and asserts that every check it
/// made passed (`N passed, 0 failed`), showing its output if not.
fn check(script: &str, args: &[&str]) {
    let mut all = vec![script];
    all.extend(args);
    let Some(stdout) = run_torch(&all) else {
        return;
    };
    assert!(
        stdout.contains(" passed, 0 failed"),
        "{script} {args:?}: the reader disagrees:\n{stdout}"
    );
}

/// `pack INPUT OUT --format webdataset --shard-size 40KiB --index INDEX`; asserts it wrote
/// more than one shard.
fn pack(input: &Path, out: &Path, index: &str) {
    let (code, report) = run_json(&[
        "pack",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "webdataset",
        "--shard-size",
        "40KiB",
        "--index",
        index,
    ]);
    assert_eq!(code, 0, "{report}");
    assert!(report["shards"].as_u64().unwrap() > 1, "{report}");
}

/// Packs the sample corpus and a generated one (keys with a folder part, empty files)
/// with `--index INDEX`; `SCRIPT read` each against its input, `SCRIPT compare` the first.
fn reads_and_compares(script: &str, index: &str) {
    let out = Tree::new();
    let dir = out.join("wds");
    pack(&samples(), &dir, index);
    check(
        script,
        &["read", samples().to_str().unwrap(), dir.to_str().unwrap()],
    );
    check(script, &["compare", dir.to_str().unwrap()]);

    let input = corpus(60, 3000);
    let generated = out.join("corpus");
    pack(input.path(), &generated, index);
    check(
        script,
        &[
            "read",
            input.path().to_str().unwrap(),
            generated.to_str().unwrap(),
        ],
    );
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn dali_reads_every_sample_through_our_index() {
    if torch_python().is_none() {
        return;
    }
    reads_and_compares("check_dali_index.py", "dali");
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn energon_reads_every_sample_through_our_index() {
    if torch_python().is_none() {
        return;
    }
    reads_and_compares("check_energon_index.py", "energon");
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn index_of_shardwriter_shards_is_what_wds2idx_and_energon_prepare_write() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    let sw = out.s("sw");
    check("check_dali_index.py", &["write", &sw]);
    let (code, report) = run_json(&["index", &sw, "--for", "dali,energon"]);
    assert_eq!(code, 0, "{report}");
    check("check_dali_index.py", &["compare", &sw]);
    check("check_energon_index.py", &["compare", &sw]);
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn a_stale_index_misleads_both_readers_and_verify_says_so() {
    let Some(python) = torch_python() else {
        return;
    };
    let out = Tree::new();
    let dir = out.join("wds");
    pack(&samples(), &dir, "dali,energon");
    // A shard rewritten after its indexes (another shard's bytes), the manifest made
    // again over it: the digests match, the indexes do not.
    std::fs::copy(dir.join("shard-000000.tar"), dir.join("shard-000001.tar")).unwrap();
    let o = run(&["manifest", dir.to_str().unwrap(), "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    let stale = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "index_mismatch")
        .count();
    assert!(stale >= 3, "{report}");
    // The readers' verdict beside ours: each reads something other than the input.
    for script in ["check_dali_index.py", "check_energon_index.py"] {
        let o = std::process::Command::new(&python)
            .args([
                script,
                "read",
                samples().to_str().unwrap(),
                dir.to_str().unwrap(),
            ])
            .current_dir(crate::interop::interop_dir())
            .env("PYTHONPATH", crate::interop::interop_dir())
            .env("OMP_NUM_THREADS", "1")
            .output()
            .unwrap();
        let stdout = text(&o.stdout);
        assert!(
            !o.status.success() && !stdout.contains(" passed, 0 failed"),
            "{script}: the reader did not notice the stale index:\n{stdout}{}",
            text(&o.stderr)
        );
    }
}
