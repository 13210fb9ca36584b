//! `ls` and `cat` of a dataset of one shard per five samples, on local disk and in a
//! bucket: the same listing, bytes and note.

use super::util::originals;
use crate::util::*;

/// The key the two tests below `cat`.
const KEY: &str = "c02/sample_00016";

/// A corpus and its webdataset (`wds` in the second tree), five samples a shard.
fn five_per_shard() -> (Tree, Tree) {
    let input = corpus(30, 2000);
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
    (input, t)
}

/// What `ls DATASET`, `cat DATASET KEY bin -v` and `cat` of a missing key answered, run
/// by `look` (the binary on local disk, or against the S3 server).
struct Looked {
    ls: String,
    bytes: Vec<u8>,
    note: String,
    missing: String,
}

fn look_at(dataset: &str, look: impl Fn(&[&str]) -> std::process::Output) -> Looked {
    let o = look(&["ls", dataset]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let ls = text(&o.stdout);
    let o = look(&["cat", dataset, KEY, "bin", "-v"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (bytes, note) = (o.stdout, text(&o.stderr));
    let o = look(&["cat", dataset, "c02/nothing"]);
    assert_eq!(o.status.code(), Some(2));
    Looked {
        ls,
        bytes,
        note,
        missing: text(&o.stderr),
    }
}

/// `cat -v`'s note names the one shard that holds [`KEY`] (by the manifest of `wds`) and
/// the bytes read.
fn assert_opened_the_holder(wds: &std::path::Path, note: &str) {
    let m = manifest(wds);
    let holder = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["first_key"].as_str().is_some_and(|k| k <= KEY)
                && f["last_key"].as_str().is_some_and(|k| KEY <= k)
        })
        .unwrap();
    let prefix = format!("opened {}; ", holder["path"].as_str().unwrap());
    assert!(note.trim_end().ends_with(" bytes read"), "{note}");
    assert!(note.starts_with(&prefix), "{note}");
}

#[test]
fn ls_and_cat_read_a_dataset_one_shard_per_sample() {
    let (input, t) = five_per_shard();
    let want = originals(&input);
    let local = look_at(&t.s("wds"), run);
    assert!(local.ls.starts_with("SHARD "), "{}", local.ls);
    assert_eq!(local.ls.lines().count(), 1 + 6 + 1, "{}", local.ls);
    assert_eq!(local.bytes, want[&(KEY.to_string(), "bin".to_string())]);
    assert_opened_the_holder(&t.join("wds"), &local.note);
    assert_eq!(
        local.missing,
        format!("error: no sample `c02/nothing` in {}\n", t.s("wds"))
    );
}

/// The same dataset in a bucket: the same listing, bytes and note as on local disk
/// (above).
#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn ls_and_cat_read_a_dataset_in_a_bucket_one_shard_per_sample() {
    let Some(s3) = crate::remote::s3::S3::start() else {
        return;
    };
    let (input, t) = five_per_shard();
    let want = originals(&input);
    copy_dir(&t.join("wds"), &s3.bucket("look").join("wds"));
    let local = look_at(&t.s("wds"), run);
    let remote = look_at("s3://look/wds", |args| s3.run(args));
    let body = |s: &str| s.lines().rev().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&remote.ls), body(&local.ls));
    assert_eq!(remote.ls, local.ls.replace(&t.s("wds"), "s3://look/wds"));
    assert_eq!(remote.bytes, want[&(KEY.to_string(), "bin".to_string())]);
    assert_opened_the_holder(&t.join("wds"), &remote.note);
    assert_eq!(
        remote.missing,
        "error: no sample `c02/nothing` in s3://look/wds\n"
    );
}
