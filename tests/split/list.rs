//! `shardsmith list INPUT -o LIST` and `pack --files-from LIST` with sizes: one listing
//! made once and shared by the tasks of a split run, on disk and in a bucket; the sizes
//! it gives are checked by the reads, never trusted into a wrong shard.

use std::collections::BTreeMap;

use crate::remote::s3::S3;
use crate::util::*;

/// The `PATH<TAB>SIZE` lines of a list, as a map.
fn entries(list: &str) -> BTreeMap<String, u64> {
    list.lines()
        .map(|l| {
            let (rel, size) = l.rsplit_once('\t').expect("PATH<TAB>SIZE");
            (rel.to_string(), size.parse().unwrap())
        })
        .collect()
}

#[test]
fn a_list_made_once_packs_as_the_directory_does_and_its_sizes_are_checked() {
    let input = corpus(120, 5000);
    let inp = input.path().to_str().unwrap();
    let t = Tree::new();
    // What pack would read: every file, with its size, and nothing of a dataset's own.
    input.file("done/manifest.json", r#"{"tool": "shardsmith"}"#);
    let o = run(&["list", inp]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let listed = entries(&text(&o.stdout));
    let mut want = BTreeMap::new();
    for (rel, bytes) in snapshot(input.path()) {
        want.insert(rel, bytes.len() as u64);
    }
    want.remove("done/manifest.json");
    assert_eq!(listed, want);
    let (code, report) = run_json(&["list", inp, "-o", &t.s("lists/files.tsv")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["files"], want.len());
    assert_eq!(report["bytes"], want.values().sum::<u64>());
    assert_eq!(
        std::fs::read_to_string(t.join("lists/files.tsv")).unwrap(),
        text(&o.stdout)
    );
    let o = run(&["list", inp, "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--json needs -o LIST"));

    // Packed from the list, in tasks, the single run's bytes.
    let common = ["--shard-size", "32KiB"];
    let o = run(&[&["pack", inp, &t.s("single")][..], &common].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    for i in 0..3 {
        let o = run(&[
            &[
                "pack",
                inp,
                &t.s("split"),
                "--files-from",
                &t.s("lists/files.tsv"),
            ][..],
            &common,
            &["--task-index", &i.to_string(), "--task-count", "3"],
        ]
        .concat());
        assert!(o.status.success(), "task {i}: {}", text(&o.stderr));
    }
    let o = run(&["merge", &t.s("split")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(snapshot(&t.join("split")), snapshot(&t.join("single")));

    // A size the list gets wrong, or a file gone since: the read finds it, the run stops
    // (exit 2) naming the file, and no shard holds the wrong bytes.
    let (rel, size) = want.iter().find(|(_, s)| **s > 10).unwrap();
    for (line, kind) in [
        (format!("{rel}\t{}\n", size - 1), "input_changed"),
        ("c00/gone.bin\t12\n".to_string(), "input_vanished"),
    ] {
        std::fs::write(t.join("bad.tsv"), &line).unwrap();
        let out = t.s(kind);
        let (code, report) = run_json(&["pack", inp, &out, "--files-from", &t.s("bad.tsv")]);
        assert_eq!(code, 2, "{line}: {report}");
        assert_eq!(report["error"]["kind"], kind, "{report}");
        let name = line.split('\t').next().unwrap();
        assert!(
            report["error"]["message"].as_str().unwrap().contains(name),
            "the file is named: {report}"
        );
        assert!(!t.join(&format!("{kind}/manifest.json")).exists());
    }
}

/// A list of a bucket's names without sizes would need a request per key: refused before
/// anything is asked of the store (the endpoint is a port where nothing listens), saying
/// how to make one with sizes.
#[test]
fn a_bucket_list_without_sizes_is_refused_before_asking_the_store() {
    let t = Tree::new();
    t.file("names.txt", "c00/sample_00000.bin\nc00/sample_00000.txt\n");
    let o = cmd()
        .env(
            "AWS_ENDPOINT_URL",
            format!("http://127.0.0.1:{}", free_port()),
        )
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "key")
        .env("AWS_SECRET_ACCESS_KEY", "secret-value")
        .args([
            "pack",
            "s3://raw/images",
            &t.s("out"),
            "--files-from",
            &t.s("names.txt"),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!t.join("out").exists(), "nothing was written");
    let err = text(&o.stderr);
    assert!(
        err.contains("KEY<TAB>SIZE") && err.contains("shardsmith list s3://raw/images"),
        "{err}"
    );
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_bucket_listed_once_is_packed_without_listing_it_again() {
    let Some(s3) = S3::start() else { return };
    let input = corpus(80, 4000);
    copy_dir(input.path(), &s3.bucket("raw").join("images"));
    let t = Tree::new();
    // The list goes where every pod of an Indexed Job can read it: beside the output.
    let list = "s3://shards/mds-files.tsv";
    let (code, report) = s3.json(&["list", "s3://raw/images", "-o", list]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["list"], list);
    let local = run(&["list", input.path().to_str().unwrap()]);
    let listed = std::fs::read_to_string(s3.bucket("shards").join("mds-files.tsv")).unwrap();
    assert_eq!(
        listed,
        text(&local.stdout),
        "a prefix lists as the same files on disk"
    );
    let want = crate::remote::s3::local_pack(input.path(), &["--format", "mds"]);
    for i in 0..2 {
        let o = s3.run(&[
            "pack",
            "s3://raw/images",
            "s3://shards/mds",
            "--format",
            "mds",
            "--files-from",
            list,
            "--task-index",
            &i.to_string(),
            "--task-count",
            "2",
        ]);
        assert!(o.status.success(), "task {i}: {}", text(&o.stderr));
    }
    let (code, report) = s3.json(&["merge", "s3://shards/mds"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(snapshot(&s3.bucket("shards").join("mds")), want);
    // A bucket list without sizes is refused: below. A list that is not there is named.
    let o = s3.run(&[
        "pack",
        "s3://raw/images",
        &t.s("out"),
        "--files-from",
        "s3://shards/no-such-list.tsv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("s3://shards/no-such-list.tsv") && err.contains("does not exist"),
        "{err}"
    );
}
