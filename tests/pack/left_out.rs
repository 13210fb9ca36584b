//! Samples left out while packing (mislabelled images found by the content checks) in
//! every shard format: no empty shard, no gap in the numbering, every shard within the
//! target size, the same bytes for any `--jobs`, and a dataset `verify` passes.

use crate::util::*;

/// 60 samples; the images of 20..40 are PNGs named `.jpg` (as a scraper mislabels them).
fn mislabelled() -> Tree {
    let tree = Tree::new();
    for i in 0..60 {
        let mut image = if (20..40).contains(&i) {
            b"\x89PNG\r\n\x1a\n".to_vec()
        } else {
            vec![0xff, 0xd8, 0xff, 0xe0]
        };
        image.extend(noise(i, 3000));
        image.extend_from_slice(&[0xff, 0xd9]);
        tree.file(&format!("c/{i:04}.jpg"), image);
        tree.file(&format!("c/{i:04}.cls"), format!("{}", i % 5));
    }
    tree
}

fn names(dir: &std::path::Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}

#[test]
fn no_empty_shard_and_no_gap_in_any_format() {
    let input = mislabelled();
    for (format, ext, name) in [
        ("webdataset", ".tar", "shard-{:06}.tar"),
        ("mds", ".mds", "shard.{:05}.mds"),
        ("parquet", ".parquet", "shard-{:06}.parquet"),
    ] {
        let out = Tree::new();
        let mut outputs = Vec::new();
        for jobs in ["1", "2"] {
            let dir = out.s(&format!("j{jobs}"));
            let o = run(&[
                "pack",
                input.path().to_str().unwrap(),
                &dir,
                "--format",
                format,
                "--shard-size",
                "16KiB",
                "--jobs",
                jobs,
            ]);
            assert_eq!(o.status.code(), Some(0), "{format}: {}", text(&o.stderr));
            let stderr = text(&o.stderr);
            assert!(
                stderr.contains("planned shard(s) would have held only samples that were left out"),
                "{format}: {stderr}"
            );
            outputs.push(snapshot(&out.join(&format!("j{jobs}"))));
        }
        assert_eq!(outputs[0], outputs[1], "{format}: --jobs 1 and 2 differ");
        let dir = out.join("j1");
        let shards = names(&dir, ext);
        let expected: Vec<String> = (0..shards.len())
            .map(|i| {
                name.replace("{:06}", &format!("{i:06}"))
                    .replace("{:05}", &format!("{i:05}"))
            })
            .collect();
        assert_eq!(shards, expected, "{format}: contiguous numbers");
        let m = manifest(&dir);
        assert_eq!(m["totals"]["samples"], 40, "{format}");
        assert_eq!(m["skipped"].as_array().unwrap().len(), 40, "{format}");
        assert_eq!(m["skipped"][0]["path"], "c/0020.cls", "{format}");
        assert_eq!(m["skipped"][1]["path"], "c/0020.jpg", "{format}");
        assert_eq!(
            m["skipped"][1]["reason"], "is not a JPEG (no start-of-image marker)",
            "{format}"
        );
        for entry in m["files"].as_array().unwrap() {
            if entry["path"].as_str().unwrap().ends_with(ext) {
                assert!(entry["samples"].as_u64().unwrap() > 0, "{format}: {entry}");
                assert!(
                    entry["size"].as_u64().unwrap() <= 16 * 1024,
                    "{format}: {entry}"
                );
            }
        }
        if format == "mds" {
            let index: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
            let listed: Vec<&str> = index["shards"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["raw_data"]["basename"].as_str().unwrap())
                .collect();
            assert_eq!(listed, expected, "index.json lists the shards on disk");
        }
        let v = run(&["verify", dir.to_str().unwrap()]);
        assert_eq!(v.status.code(), Some(0), "{format}: {}", text(&v.stdout));
    }
}
