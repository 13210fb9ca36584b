//! MDS output against the real mosaicml-streaming 0.13.0: golden bytes vs MDSWriter
//! and read-back through StreamingDataset, for every compression; merge vs merge_index.

use crate::interop::{check, python};
use crate::util::*;

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
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
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
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
    // Two parts packed separately (the first and the second half of the samples, chosen
    // with --files-from), each into a directory of the output.
    let mut halves = [String::new(), String::new()];
    for file in files_below(input.path()) {
        let rel = file
            .strip_prefix(input.path())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let n: usize = rel.split("/s").nth(1).unwrap()[..5].parse().unwrap();
        halves[usize::from(n >= 15)].push_str(&format!("{rel}\n"));
    }
    for (part, list) in halves.iter().enumerate() {
        out.file(&format!("list-{part}"), list.clone());
        let o = cmd()
            .args([
                "pack",
                input.path().to_str().unwrap(),
                &out.s(&format!("parts/{part}")),
                "--format",
                "mds",
                "--shard-size",
                "16KiB",
            ])
            .args([
                "--files-from",
                &out.s(&format!("list-{part}")),
                "--compression",
                "zstd",
            ])
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

fn files_below(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_below(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}
