//! The real webdataset 1.0.2 reads our `.tar.gz` shards exactly; `.tar.zst` shards are
//! checked as far as the pinned env's Python allows (see
//! `tests/interop/check_webdataset_compressed.py`).
//!
//! Needs `SHARDSMITH_PYTHON`, as `tests/interop.rs`: without it the test says so, and
//! fails under CI.

use std::path::Path;

use crate::interop::{check, python};
use crate::util::*;

fn pack(input: &Path, output: &Path, args: &[&str]) {
    let mut all = vec!["pack", input.to_str().unwrap(), output.to_str().unwrap()];
    all.extend(args);
    let (code, report) = run_json(&all);
    assert_eq!(code, 0, "{report}");
    assert!(report["shards"].as_u64().unwrap() > 1, "{report}");
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_compressed_samples_exactly() {
    if python().is_none() {
        return;
    }
    let out = Tree::new();
    for (codec, recorded) in [("gz", "gz:6"), ("zstd", "zstd:3")] {
        let dir = out.join(codec);
        pack(
            &samples(),
            &dir,
            &["--shard-size", "48KiB", "--compression", codec],
        );
        check(
            "check_webdataset_compressed.py",
            &[samples().to_str().unwrap(), dir.to_str().unwrap(), recorded],
        );
    }
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_compressed_edge_cases_exactly() {
    if python().is_none() {
        return;
    }
    let t = Tree::new();
    for (i, size) in [0usize, 1, 511, 512, 513, 65_536, 200_000]
        .into_iter()
        .enumerate()
    {
        t.file(&format!("sizes/s{i:02}.bin"), noise(i as u64, size));
        t.file(&format!("sizes/s{i:02}.txt"), format!("{size} bytes"));
    }
    t.file(
        "multi/a.seg.png",
        b"\x89PNG\r\n\x1a\n mask \0\0\0\0IEND\xaeB`\x82",
    )
    .file("multi/a.json.gz", noise(7, 300))
    .file("utf8/ünïcødé_κλειδί.txt", "non-ASCII key".as_bytes())
    .file("zeros/z.bin", vec![0u8; 300_000]);
    for i in 0..200 {
        t.file(
            &format!("many/{i:04}.bin"),
            noise(100 + i, (i as usize * 131) % 3000),
        );
    }
    let out = Tree::new();
    for (level, recorded) in [("gz:9", "gz:9"), ("gz:1", "gz:1"), ("zstd:19", "zstd:19")] {
        let dir = out.join(level);
        pack(
            t.path(),
            &dir,
            &[
                "--shard-size",
                "16KiB",
                "--shuffle",
                "--seed",
                "5",
                "--compression",
                level,
            ],
        );
        check(
            "check_webdataset_compressed.py",
            &[t.path().to_str().unwrap(), dir.to_str().unwrap(), recorded],
        );
    }
}
