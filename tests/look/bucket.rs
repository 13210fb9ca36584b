//! `ls` and `cat` of a dataset in a bucket, one shard per five samples: the listing of
//! the same dataset on local disk, the original bytes, only the holding shard read.

use super::util::{ok, originals};
use crate::util::*;

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn ls_and_cat_read_a_dataset_in_a_bucket_one_shard_per_sample() {
    let Some(s3) = crate::remote::s3::S3::start() else {
        return;
    };
    let input = corpus(30, 2000);
    let want = originals(&input);
    let t = Tree::new();
    let o = run(&[
        "pack",
        input.path().to_str().unwrap(),
        &t.s("wds"),
        "--max-samples",
        "5",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    copy_dir(&t.join("wds"), &s3.bucket("look").join("wds"));
    let local = ok(&["ls", &t.s("wds")]);
    let o = s3.run(&["ls", "s3://look/wds"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let remote = text(&o.stdout);
    let body = |s: &str| s.lines().rev().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&remote), body(&local));
    assert_eq!(remote, local.replace(&t.s("wds"), "s3://look/wds"));
    let key = "c02/sample_00016";
    let o = s3.run(&["cat", "s3://look/wds", key, "bin", "-v"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(o.stdout, want[&(key.to_string(), "bin".to_string())]);
    let note = text(&o.stderr);
    let m = manifest(&t.join("wds"));
    let holder = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["first_key"].as_str().is_some_and(|k| k <= key)
                && f["last_key"].as_str().is_some_and(|k| key <= k)
        })
        .unwrap();
    let prefix = format!("opened {}; ", holder["path"].as_str().unwrap());
    assert!(note.trim_end().ends_with(" bytes read"), "{note}");
    assert!(note.starts_with(&prefix), "{note}");
    let o = s3.run(&["cat", "s3://look/wds", "c02/nothing"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "error: no sample `c02/nothing` in s3://look/wds\n"
    );
}
