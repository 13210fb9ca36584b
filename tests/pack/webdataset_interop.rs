//! The real Python readers (webdataset 1.0.2, wids 0.1.11) read what we write, exactly.
//!
//! Needs `SHARDSMITH_PYTHON` (see `tests/interop.rs`), so its tests are ignored unless
//! asked for (tests/README.md); asked for without it, they fail under CI (where skipping
//! would hide a broken set-up).

use crate::interop::{check, python};
use crate::util::*;

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_the_samples_exactly() {
    if python().is_none() {
        return;
    }
    let out = Tree::new();
    assert!(
        run(&[
            "pack",
            samples().to_str().unwrap(),
            &out.s("s"),
            "--shard-size",
            "48KiB"
        ])
        .status
        .success()
    );
    check(
        "check_webdataset.py",
        &[samples().to_str().unwrap(), &out.s("s")],
    );
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_edge_cases_exactly() {
    if python().is_none() {
        return;
    }
    let t = Tree::new();
    for (i, size) in [0usize, 1, 511, 512, 513, 1023, 1024, 65_536, 200_000]
        .into_iter()
        .enumerate()
    {
        t.file(&format!("sizes/s{i:02}.bin"), noise(i as u64, size));
        t.file(&format!("sizes/s{i:02}.txt"), format!("{size} bytes"));
    }
    // Member names of exactly 100 bytes (key 96 + ".jpg").
    let key = format!("{}/{}", "n".repeat(40), "k".repeat(55));
    assert_eq!(key.len() + 4, 100);
    t.file(
        &format!("{key}.jpg"),
        b"\xff\xd8\xff\xe0 100-byte name \xff\xd9",
    );
    t.file(
        "multi/a.seg.png",
        b"\x89PNG\r\n\x1a\n mask \0\0\0\0IEND\xaeB`\x82",
    )
    .file("multi/a.json.gz", noise(7, 300))
    .file("multi/a.JSON", b"{\"upper\": true}")
    .file("dots.in.dirs/x.txt", b"dir names may hold dots")
    .file("utf8/ünïcødé_κλειδί.txt", "non-ASCII key".as_bytes())
    .file("utf8/space name.txt", b"spaces are fine")
    .file("deep/a/b/c/d/e/f.cls", b"7");
    for i in 0..300 {
        t.file(
            &format!("many/{i:04}.bin"),
            noise(100 + i, (i as usize * 131) % 3000),
        );
    }
    // Inputs that must be left out, not written (the checker asserts they are listed).
    t.file("noext", b"x")
        .file("many/.hidden", b"x")
        .file(&format!("{}.json", "x".repeat(100)), b"{}");
    let out = Tree::new();
    let (code, report) = run_json(&[
        "pack",
        t.path().to_str().unwrap(),
        &out.s("s"),
        "--shard-size",
        "16KiB",
        "--shuffle",
        "--seed",
        "5",
    ]);
    assert_eq!(code, 0, "{report}");
    assert!(
        report["shards"].as_u64().unwrap() > 20,
        "many rollovers and a short last shard"
    );
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3);
    check(
        "check_webdataset.py",
        &[t.path().to_str().unwrap(), &out.s("s")],
    );
}
