//! `pack --dedup`: samples whose fields equal an earlier sample's are left out and
//! listed; near-duplicates are kept; the same bytes for any `--jobs`, after a resume, and
//! through the committer's second look at streamed samples; split runs dedup each share.

use std::collections::BTreeSet;
use std::path::Path;

use crate::util::*;

/// 120 samples in 40 groups of 3 with the same `.bin` and `.cls` under other keys, and
/// near-duplicates of group 0..3 that must be kept: one byte flipped, another field
/// name, another label.
fn corpus_with_duplicates() -> Tree {
    let tree = Tree::new();
    for i in 0..120u64 {
        tree.file(&format!("k{i:03}.bin"), noise(i % 40, 3000));
        tree.file(&format!("k{i:03}.cls"), format!("{}", i % 40));
    }
    let mut flipped = noise(0, 3000);
    flipped[1234] ^= 1;
    tree.file("k200.bin", flipped).file("k200.cls", "0");
    tree.file("k201.dat", noise(1, 3000)).file("k201.cls", "1");
    tree.file("k202.bin", noise(2, 3000)).file("k202.cls", "99");
    tree
}

/// The keys of every sample in the tar shards of `dir`, in order.
fn packed_keys(dir: &Path) -> Vec<String> {
    let mut keys = Vec::new();
    for entry in manifest(dir)["files"].as_array().unwrap() {
        let path = dir.join(entry["path"].as_str().unwrap());
        let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
        for member in archive.entries().unwrap() {
            let name = member
                .unwrap()
                .path()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let key = name.split('.').next().unwrap().to_string();
            if keys.last() != Some(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

#[test]
fn duplicates_under_other_keys_are_left_out_and_listed_near_duplicates_kept() {
    let input = corpus_with_duplicates();
    let t = Tree::new();
    let args = |out: &str, jobs: &str| {
        let mut a = vec!["pack", input.path().to_str().unwrap(), out, "--dedup"];
        a.extend(["--shard-size", "64KiB", "--jobs", jobs]);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let one: Vec<String> = args(&t.s("one"), "1");
    let (code, report) = run_json(&one.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 43);
    assert_eq!(report["duplicates"]["count"], 80);
    let m = manifest(&t.join("one"));
    let d = &m["duplicates"];
    assert_eq!(d["count"], 80);
    let label_bytes: u64 = (40..120u64)
        .map(|i| format!("{}", i % 40).len() as u64)
        .sum();
    assert_eq!(d["bytes"], 80 * 3000 + label_bytes);
    let first = d["first"].as_array().unwrap();
    assert_eq!(first.len(), 80);
    assert_eq!(first[0], serde_json::json!({"key": "k040", "of": "k000"}));
    assert_eq!(first[79], serde_json::json!({"key": "k119", "of": "k039"}));
    assert_eq!(m["options"]["dedup"], true);
    let mut kept: Vec<String> = (0..40).map(|i| format!("k{i:03}")).collect();
    kept.extend(["k200", "k201", "k202"].map(String::from));
    assert_eq!(packed_keys(&t.join("one")), kept);

    // The same bytes with two workers, which meet duplicates before the earlier sample
    // is registered.
    for run_ in 0..3 {
        let out = t.s(&format!("two{run_}"));
        let two = args(&out, "2");
        let o = run(&two.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(snapshot(&t.join("one")), snapshot(Path::new(&out)));
    }
    let v = run(&["verify", &t.s("one")]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));

    // The summary says it; without --dedup nothing is left out and nothing is said.
    let o = run(&args(&t.s("text"), "2")
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    let stdout = text(&o.stdout);
    assert!(stdout.contains("duplicates 80 sample(s)"), "{stdout}");
    assert!(stdout.contains("k040 (same as k000)"), "{stdout}");
    let (code, report) = run_json(&["pack", input.path().to_str().unwrap(), &t.s("plain")]);
    assert_eq!(code, 0);
    assert_eq!(report["samples"], 123);
    assert!(report.get("duplicates").is_none(), "{report}");
    assert!(manifest(&t.join("plain")).get("duplicates").is_none());
}

#[test]
fn streamed_duplicates_are_found_after_writing_and_written_again_without() {
    // Fields over 16 MiB stream into the shard, hashed on the way: a duplicate among
    // them is found once written, and its shard is written again.
    let input = Tree::new();
    let big = noise(7, 17 << 20);
    input.file("a.bin", &big).file("b.bin", noise(8, 17 << 20));
    input.file("c.bin", &big).file("d.bin", b"small");
    input.file("e.bin", b"small");
    let t = Tree::new();
    for jobs in ["1", "2"] {
        let (code, report) = run_json(&[
            "pack",
            input.path().to_str().unwrap(),
            &t.s(jobs),
            "--dedup",
            "--shard-size",
            "40MiB",
            "--jobs",
            jobs,
        ]);
        assert_eq!(code, 0, "{report}");
        assert_eq!(report["duplicates"]["count"], 2, "{report}");
        assert_eq!(
            manifest(&t.join(jobs))["duplicates"]["first"],
            serde_json::json!([{"key": "c", "of": "a"}, {"key": "e", "of": "d"}])
        );
        assert_eq!(packed_keys(&t.join(jobs)), ["a", "b", "d"]);
    }
    assert_eq!(snapshot(&t.join("1")), snapshot(&t.join("2")));
}

#[test]
fn a_killed_dedup_run_resumes_to_the_same_bytes() {
    let input = Tree::new();
    for i in 0..3000u64 {
        input.file(&format!("s{i:04}.bin"), noise(i % 1200, 20_000));
    }
    let t = Tree::new();
    let common = ["--dedup", "--shard-size", "256KiB", "--jobs", "2"];
    let whole = t.s("whole");
    let o = run(&[
        &["pack", input.path().to_str().unwrap(), &whole][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(manifest(&t.join("whole"))["duplicates"]["count"], 1800);
    let killed_dir = t.s("killed");
    let args = [
        &["pack", input.path().to_str().unwrap(), &killed_dir][..],
        &common,
    ]
    .concat();
    let out = t.join("killed");
    let killed = run_and_kill_when(&args, &[], || {
        std::fs::read_dir(&out).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("shard-"))
                .count()
                >= 5
        })
    });
    assert!(killed, "the run was killed mid-way");
    let (code, report) = run_json(&args);
    assert_eq!(code, 0);
    assert!(
        report["shards_resumed"].as_u64().unwrap() >= 5,
        "{}",
        report["shards_resumed"]
    );
    assert_eq!(snapshot(&t.join("whole")), snapshot(&t.join("killed")));
}

#[test]
fn split_tasks_dedup_their_own_share_and_merge_counts_across_shares() {
    // Samples 0..100 then 100..200 repeat 0..100: each task's share is one half when
    // split in two, so every duplicate crosses shares; 10 more repeat inside the end.
    let input = Tree::new();
    for i in 0..210u64 {
        let seed = if i < 200 {
            i % 100
        } else {
            150 + (i - 200) % 5
        };
        input.file(&format!("s{i:04}.bin"), noise(seed, 10_000));
    }
    let t = Tree::new();
    let out = t.s("split");
    let args = [
        "pack",
        input.path().to_str().unwrap(),
        &out,
        "--dedup",
        "--shard-size",
        "64KiB",
        "--task-count",
        "2",
    ];
    for i in ["0", "1"] {
        let o = run(&[&args[..], &["--task-index", i]].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let o = run(&["merge", &out]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let m = manifest(&t.join("split"));
    // One run leaves out 105 (s0100..s0199 and s0205..s0209); split at about s0100, the
    // tasks leave out those within their share and merge counts the rest.
    let in_share = m["duplicates"]["count"].as_u64().unwrap();
    let across: u64 = err
        .split("warning: ")
        .find_map(|w| {
            w.split(" packed sample(s) have the content digest")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("merge counts duplicates across shares: {err}"));
    assert!(across > 50 && in_share >= 5, "{across} {in_share}");
    assert_eq!(in_share + across, 105, "{}", m["duplicates"]);
    let keys: BTreeSet<String> = packed_keys(&t.join("split")).into_iter().collect();
    assert_eq!(keys.len() as u64, 210 - in_share);
    assert!(keys.contains("s0200") && !keys.contains("s0205"));
    // One run leaves out every duplicate.
    let (code, report) = run_json(&[
        "pack",
        input.path().to_str().unwrap(),
        &t.s("single"),
        "--dedup",
        "--shard-size",
        "64KiB",
    ]);
    assert_eq!(code, 0);
    assert_eq!(report["samples"], 105);
}

#[test]
fn stats_counts_duplicate_contents_in_every_format() {
    let input = corpus_with_duplicates();
    // Tabular formats need every sample to have the same fields.
    for file in ["k201.dat", "k201.cls"] {
        std::fs::remove_file(input.join(file)).unwrap();
    }
    let t = Tree::new();
    let label_bytes: u64 = (40..120u64)
        .map(|i| format!("{}", i % 40).len() as u64)
        .sum();
    for format in ["webdataset", "mds", "parquet", "hf", "litdata"] {
        let out = t.s(format);
        let o = run(&[
            "pack",
            input.path().to_str().unwrap(),
            &out,
            "--format",
            format,
            "--shard-size",
            "64KiB",
        ]);
        assert!(o.status.success(), "{format}: {}", text(&o.stderr));
        let (code, report) = run_json(&["stats", &out, "--dedup"]);
        assert_eq!(code, 0, "{format}: {report}");
        let d = &report["duplicate_contents"];
        assert_eq!(d["count"], 80, "{format}: {d}");
        assert_eq!(d["bytes"], 80 * 3000 + label_bytes, "{format}: {d}");
        assert_eq!(
            d["first"][0],
            serde_json::json!({"key": "k040", "of": "k000"}),
            "{format}"
        );
        let o = run(&["stats", &out, "--dedup"]);
        assert!(
            text(&o.stdout).contains("duplicate contents: 80 samples"),
            "{format}: {}",
            text(&o.stdout)
        );
        // Without --dedup only the listing is read, and nothing is said of contents.
        let (_, report) = run_json(&["stats", &out]);
        assert!(report.get("duplicate_contents").is_none(), "{report}");
    }
    let deduped = t.s("deduped");
    let o = run(&["pack", input.path().to_str().unwrap(), &deduped, "--dedup"]);
    assert!(o.status.success());
    let (_, report) = run_json(&["stats", &deduped, "--dedup"]);
    assert_eq!(report["duplicate_contents"]["count"], 0, "{report}");
}
