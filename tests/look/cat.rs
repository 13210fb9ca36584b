//! `cat`: the original bytes, only the holding shard read, keys of shuffled datasets and
//! of datasets without a manifest, compressed shards, Parquet keys, GNU tar names, and
//! errors that name the key, the field and the dataset.

use std::collections::BTreeMap;
use std::io::Read;

use super::util::{ok, originals, pack, small};
use crate::util::*;

#[test]
fn cat_writes_the_original_bytes_and_reads_only_the_holding_shard() {
    let input = corpus(60, 5000);
    let want = originals(&input);
    let t = Tree::new();
    for (name, format) in [("wds", "webdataset"), ("mds", "mds"), ("pq", "parquet")] {
        let out = t.s(name);
        let o = run(&[
            "pack",
            input.path().to_str().unwrap(),
            &out,
            "--format",
            format,
            "--max-samples",
            "5",
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let manifest = manifest(&t.join(name));
        let shards: Vec<&serde_json::Value> = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["samples"].as_u64().is_some_and(|n| n > 0))
            .collect();
        assert_eq!(shards.len(), 12, "{name}");
        for key in ["c00/sample_00000", "c03/sample_00031", "c06/sample_00048"] {
            for field in ["bin", "json", "txt"] {
                let o = run(&["cat", &out, key, field, "-v"]);
                assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
                assert_eq!(
                    o.stdout,
                    want[&(key.to_string(), field.to_string())],
                    "{name} {key}.{field}"
                );
                // -v: the one shard opened (and MDS's index), and the bytes read.
                let note = text(&o.stderr);
                let holder = shards
                    .iter()
                    .find(|f| {
                        f["first_key"].as_str().unwrap() <= key
                            && key <= f["last_key"].as_str().unwrap()
                    })
                    .unwrap();
                let path = holder["path"].as_str().unwrap();
                let opened = note
                    .trim()
                    .strip_prefix("opened ")
                    .unwrap()
                    .split("; ")
                    .next()
                    .unwrap();
                let expected = if name == "mds" {
                    format!("index.json, {path}")
                } else {
                    path.to_string()
                };
                assert_eq!(opened, expected, "{name}: {note}");
                let read: u64 = note
                    .trim()
                    .rsplit("; ")
                    .next()
                    .unwrap()
                    .trim_end_matches(" bytes read")
                    .parse()
                    .unwrap();
                let dataset: u64 = shards.iter().map(|f| f["size"].as_u64().unwrap()).sum();
                assert!(read < dataset / 2, "{name}: read {read} of {dataset}");
            }
        }
        // The whole sample as a tar, read back member by member.
        let key = "c03/sample_00031";
        let o = run(&["cat", &out, key]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let mut archive = tar::Archive::new(&o.stdout[..]);
        let mut got = BTreeMap::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            got.insert(name, data);
        }
        let expected: BTreeMap<String, Vec<u8>> = ["bin", "json", "txt"]
            .iter()
            .map(|f| {
                (
                    format!("{key}.{f}"),
                    want[&(key.to_string(), f.to_string())].clone(),
                )
            })
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn cat_finds_keys_of_a_shuffled_dataset_and_without_a_manifest() {
    let input = corpus(40, 300);
    let want = originals(&input);
    let t = Tree::new();
    let out = t.s("wds");
    let o = run(&[
        "pack",
        input.path().to_str().unwrap(),
        &out,
        "--max-samples",
        "4",
        "--shuffle",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    for i in [0, 13, 39] {
        let key = format!("c{:02}/sample_{i:05}", i % 7);
        let o = run(&["cat", &out, &key, "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_eq!(o.stdout, want[&(key.clone(), "json".to_string())]);
    }
    std::fs::remove_file(t.join("wds/manifest.json")).unwrap();
    let o = run(&["cat", &out, "c06/sample_00034", "txt"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(o.stdout, want[&("c06/sample_00034".into(), "txt".into())]);
}

#[test]
fn errors_name_the_key_the_field_and_the_dataset() {
    let t = small();
    pack(&t, "wds", &[]);
    let wds = t.s("wds");
    let o = run(&["cat", &wds, "a/9999"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!("error: no sample `a/9999` in {wds}\n")
    );
    let o = run(&["cat", &wds, "a/0001", "png"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "error: sample `a/0001` has no field `png` (it has json, txt)\n"
    );
    t.file("junk/notes.md", "# notes\n");
    let o = run(&["ls", &t.s("junk")]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: `{}` is not a dataset shardsmith can read: no WebDataset tar, MDS index.json, Parquet file, token file or checkpoint\n",
            t.s("junk")
        )
    );
    t.file("bad/x.tar", "not a tar");
    let o = run(&["stats", &t.s("bad")]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("error: ") && err.contains("x.tar") && err.contains("not a tar"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = run(&["cat", &wds, "a/0001", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["ls", &t.s("wds/shard.00000.mds")]);
    assert_eq!(o.status.code(), Some(2));
    t.file("mds/shard.00000.mds", "x");
    let o = run(&["ls", &t.s("mds/shard.00000.mds")]);
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: `{}` is one shard of an MDS dataset, which is read through its index.json: name the directory that holds index.json\n",
            t.s("mds/shard.00000.mds")
        )
    );
    let o = run(&["ls", &t.s("missing")]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!("error: dataset `{}` does not exist\n", t.s("missing"))
    );
}

#[test]
fn cat_reads_compressed_shards_and_parquet_keys_by_column_or_row() {
    let input = corpus(20, 3000);
    let want = originals(&input);
    let t = Tree::new();
    let key = "c05/sample_00012";
    for (name, args) in [
        ("mdsz", &["--format", "mds", "--compression", "zstd"][..]),
        ("wgz", &["--compression", "gz"][..]),
    ] {
        let mut all = vec![
            "pack",
            input.path().to_str().unwrap(),
            &t.s(name).leak()[..],
            "--max-samples",
            "4",
            "-q",
        ];
        all.extend_from_slice(args);
        ok(&all);
        let o = run(&["cat", &t.s(name), key, "bin"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_eq!(
            o.stdout,
            want[&(key.to_string(), "bin".to_string())],
            "{name}"
        );
    }
    // Parquet keyed by another column, and Parquet without a key column (STEM/ROW).
    ok(&[
        "pack",
        input.path().to_str().unwrap(),
        &t.s("pq"),
        "--format",
        "parquet",
        "--key-column",
        "id",
        "-q",
    ]);
    let o = run(&["cat", &t.s("pq"), key, "txt", "--key-column", "id"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(o.stdout, want[&(key.to_string(), "txt".to_string())]);
    let listed = ok(&["ls", &t.s("pq"), "-l"]);
    assert!(
        listed
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("shard-000000/000000000  shard-000000.parquet  bin="),
        "{listed}"
    );
    let o = run(&["cat", &t.s("pq"), "shard-000000/000000000", "id"]);
    assert_eq!(o.stdout, b"c00/sample_00000");
}

#[test]
fn gnu_tar_shards_with_long_and_non_ascii_names_list_and_cat() {
    let t = Tree::new();
    let long = format!("{}/{}/sample", "d".repeat(60), "e".repeat(50));
    t.file(&format!("src/{long}.txt"), "long");
    t.file(&format!("src/{long}.json"), "{\"a\":1}");
    t.file("src/ключ.txt", "ünï");
    std::fs::create_dir_all(t.join("out")).unwrap();
    for (format, shard, members) in [
        (
            "gnu",
            "g-000000.tar",
            vec![format!("{long}.json"), format!("{long}.txt")],
        ),
        ("pax", "g-000001.tar", vec!["ключ.txt".to_string()]),
    ] {
        let status = std::process::Command::new("tar")
            .arg(format!("--format={format}"))
            .arg("-cf")
            .arg(t.join("out").join(shard))
            .arg("-C")
            .arg(t.join("src"))
            .args(&members)
            .status()
            .expect("GNU tar runs");
        assert!(status.success());
    }
    let listed = ok(&["ls", &t.s("out"), "-l"]);
    let rows: Vec<String> = listed
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        rows,
        [
            "KEY SHARD FIELDS".to_string(),
            format!("{long} g-000000.tar json=7 txt=4"),
            "ключ g-000001.tar txt=5".to_string(),
        ]
    );
    let o = run(&["cat", &t.s("out"), "ключ", "txt"]);
    assert_eq!(o.stdout, "ünï".as_bytes());
    // The sample tar carries the long member names (a GNU long-name record).
    let o = run(&["cat", &t.s("out"), &long]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let mut archive = tar::Archive::new(&o.stdout[..]);
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [format!("{long}.json"), format!("{long}.txt")]);
}
