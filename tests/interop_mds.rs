//! MDS output against the real mosaicml-streaming 0.13.0: golden bytes vs MDSWriter
//! and read-back through StreamingDataset, for every compression; merge vs merge_index.

use std::path::Path;

use crate::interop::{interop_dir, python};
use crate::util::*;

fn check_mds(python: &Path, args: &[&str]) {
    let interop = interop_dir();
    let path = std::env::join_paths([interop.join("torchstub"), interop.clone()]).unwrap();
    let o = std::process::Command::new(python)
        .arg(interop.join("check_mds.py"))
        .args(args)
        .env("PYTHONPATH", path)
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert!(
        o.status.success() && stdout.contains(" passed, 0 failed"),
        "{args:?}:\n{stdout}\n{}",
        text(&o.stderr)
    );
}

#[test]
fn mds_matches_mdswriter_and_reads_back_for_every_compression() {
    let Some(python) = python() else { return };
    let input = mds_corpus(90);
    for compression in [
        "none", "zstd", "zstd:7", "gz", "gz:1", "bz2", "br:5", "snappy",
    ] {
        let out = Tree::new();
        let o = cmd()
            .args([
                "pack",
                input.path().to_str().unwrap(),
                &out.s("d"),
                "--format",
                "mds",
                "--shard-size",
                "24KiB",
            ])
            .args(["--compression", compression, "--hashes", "sha1,xxh64"])
            .args(MDS_COLUMNS)
            .output()
            .unwrap();
        assert!(o.status.success(), "{compression}: {}", text(&o.stderr));
        check_mds(&python, &[input.path().to_str().unwrap(), &out.s("d")]);
    }
}

#[test]
fn mds_single_sample_and_merged_parts() {
    let Some(python) = python() else { return };
    let one = mds_corpus(1);
    let out = Tree::new();
    let o = cmd()
        .args([
            "pack",
            one.path().to_str().unwrap(),
            &out.s("one"),
            "--format",
            "mds",
        ])
        .args(MDS_COLUMNS)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    check_mds(&python, &[one.path().to_str().unwrap(), &out.s("one")]);
    let input = mds_corpus(30);
    for rank in ["0", "1"] {
        let o = cmd()
            .args([
                "pack",
                input.path().to_str().unwrap(),
                &out.s("parts"),
                "--format",
                "mds",
                "--shard-size",
                "16KiB",
            ])
            .args(["--rank", rank, "--world-size", "2", "--compression", "zstd"])
            .args(MDS_COLUMNS)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    assert!(run(&["merge", &out.s("parts")]).status.success());
    check_mds(
        &python,
        &["--merged", input.path().to_str().unwrap(), &out.s("parts")],
    );
}
