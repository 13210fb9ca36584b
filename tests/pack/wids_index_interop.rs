//! The real wids 0.1.11 reads our `wids-index.json`: every sample by index (shuffled
//! order) equals the input, key and bytes; and `index --for wids` over shards written
//! by `webdataset.ShardWriter` writes what `widsindex create` writes, md5sum aside (see
//! `tests/interop/check_wids_index.py`).
//!
//! Needs `SHARDSMITH_PYTHON`, as `tests/interop.rs`: without it the test says so, and
//! fails under CI.

use crate::interop::{check, python};
use crate::util::*;

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn wids_reads_every_sample_through_our_index() {
    if python().is_none() {
        return;
    }
    let out = Tree::new();
    let dir = out.join("wds");
    let (code, report) = run_json(&[
        "pack",
        samples().to_str().unwrap(),
        dir.to_str().unwrap(),
        "--shard-size",
        "48KiB",
        "--index",
        "wids",
    ]);
    assert_eq!(code, 0, "{report}");
    assert!(report["shards"].as_u64().unwrap() > 1, "{report}");
    check(
        "check_wids_index.py",
        &["read", samples().to_str().unwrap(), dir.to_str().unwrap()],
    );
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn index_of_shardwriter_shards_is_what_widsindex_writes() {
    if python().is_none() {
        return;
    }
    let out = Tree::new();
    let base = out.path().to_str().unwrap();
    check("check_wids_index.py", &["write", base]);
    let (code, report) = run_json(&["index", out.join("sw").to_str().unwrap(), "--for", "wids"]);
    assert_eq!(code, 0, "{report}");
    check("check_wids_index.py", &["compare", base]);
}
