//! Hugging Face `datasets` 5.2 and shardsmith's hf format (issue 34): `load_from_disk`
//! reads our output (every key and byte against the input), directories that
//! `save_to_disk(num_shards=3)` wrote are our input (binary, string, int, float, list
//! and struct columns, with and without `__key__`), and hf → wds → hf is lossless. The
//! comparisons are `tests/interop/check_hf.py`'s.
//!
//! Needs `SHARDSMITH_TORCH_PYTHON` (the torch env holds `datasets`), as
//! `tests/interop.rs`: without it the test says so, and fails under CI.

use std::path::Path;

use crate::interop::{run_torch, torch_python};
use crate::util::*;

/// Runs `check_hf.py ARGS...` in the torch env; asserts every check passed.
fn check(args: &[&str]) {
    let mut all = vec!["check_hf.py"];
    all.extend(args);
    let Some(stdout) = run_torch(&all) else {
        return;
    };
    assert!(
        stdout.contains(" passed, 0 failed"),
        "check_hf.py {args:?}:\n{stdout}"
    );
}

/// `check_hf.py make DIR EXTRA...`: a save_to_disk directory of three shards.
fn make(dir: &Path, extra: &[&str]) {
    let mut all = vec!["check_hf.py", "make", dir.to_str().unwrap()];
    all.extend(extra);
    run_torch(&all).expect("the torch env");
    assert!(dir.join("data-00002-of-00003.arrow").exists());
}

/// `pack INPUT OUT ARGS...`; asserts success.
fn pack(input: &Path, out: &Path, args: &[&str]) {
    let mut all = vec!["pack", input.to_str().unwrap(), out.to_str().unwrap()];
    all.extend(args);
    let (code, report) = run_json(&all);
    assert_eq!(code, 0, "{report}");
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn load_from_disk_reads_every_key_and_byte_of_our_output() {
    if torch_python().is_none() {
        return;
    }
    let input = corpus(60, 6000);
    let out = Tree::new();
    let dir = out.join("hf");
    pack(
        input.path(),
        &dir,
        &["--format", "hf", "--shard-size", "32KiB"],
    );
    check(&[
        input.path().to_str().unwrap(),
        dir.to_str().unwrap(),
        "--reader",
        "datasets",
    ]);
    let dir = out.join("samples");
    pack(&samples(), &dir, &["--format", "hf"]);
    check(&[
        samples().to_str().unwrap(),
        dir.to_str().unwrap(),
        "--reader",
        "datasets",
    ]);
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn save_to_disk_output_is_read_with_every_value() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    for (name, extra) in [("keyed", &[][..]), ("unkeyed", &["--no-key"][..])] {
        let hf = out.join(name);
        make(&hf, extra);
        let wds = out.join(&format!("{name}-wds"));
        pack(&hf, &wds, &["--format", "webdataset"]);
        check(&["wds", hf.to_str().unwrap(), wds.to_str().unwrap()]);
        // Straight to hf: lists and structs become their JSON text in string columns,
        // the rest keeps its type.
        let again = out.join(&format!("{name}-hf"));
        pack(&hf, &again, &["--format", "hf"]);
        check(&[
            hf.to_str().unwrap(),
            again.to_str().unwrap(),
            "--reader",
            "datasets",
        ]);
    }
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn hf_to_webdataset_to_hf_is_lossless() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    let hf = out.join("hf");
    make(&hf, &["--plain"]);
    let wds = out.join("wds");
    pack(&hf, &wds, &["--format", "webdataset"]);
    let back = out.join("back");
    pack(
        &wds,
        &back,
        &[
            "--format",
            "hf",
            "--column",
            "label:int",
            "--column",
            "score:float64",
        ],
    );
    check(&["same", hf.to_str().unwrap(), back.to_str().unwrap()]);
}
