//! MDS output against the real mosaicml-streaming 0.13.0: golden bytes vs MDSWriter
//! and read-back through StreamingDataset, for every compression; merge vs merge_index.

use crate::interop::{check, python};
use crate::util::*;

#[test]
fn mds_matches_mdswriter_and_reads_back_for_every_compression() {
    if python().is_none() {
        return;
    }
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
        check(
            "check_mds.py",
            &[input.path().to_str().unwrap(), &out.s("d")],
        );
    }
}

#[test]
fn mds_single_sample_and_merged_parts() {
    if python().is_none() {
        return;
    }
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
    check(
        "check_mds.py",
        &[one.path().to_str().unwrap(), &out.s("one")],
    );
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
    check(
        "check_mds.py",
        &["--merged", input.path().to_str().unwrap(), &out.s("parts")],
    );
}
