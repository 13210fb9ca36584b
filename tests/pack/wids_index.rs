//! wids' shard index: `pack --index wids` writes `wids-index.json` in the same pass
//! (listed in the manifest, the same bytes for any --jobs and from a split run),
//! `index --for wids` builds the same file from existing shards and writes nothing
//! for a damaged one, and `verify` catches an index gone stale. The real wids reads
//! them in `wids_index_interop.rs`.

use std::path::Path;

use crate::util::*;

/// `pack samples/ OUTPUT --shard-size 40KiB EXTRA...`: its exit code and JSON report.
pub(super) fn pack(output: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let input = samples();
    let mut args = vec![
        "pack",
        input.to_str().unwrap(),
        output.to_str().unwrap(),
        "--shard-size",
        "40KiB",
    ];
    args.extend(extra);
    run_json(&args)
}

fn index_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("wids-index.json")).expect("wids-index.json written")
}

#[test]
fn pack_writes_the_index_listed_and_the_same_for_any_jobs() {
    let out = Tree::new();
    let (code, report) = pack(&out.join("j2"), &["--index", "wids", "-j", "2"]);
    assert_eq!(code, 0, "{report}");
    let (code, report) = pack(&out.join("j1"), &["--index", "all", "-j", "1"]);
    assert_eq!(code, 0, "{report}");
    let bytes = index_bytes(&out.join("j2"));
    assert_eq!(
        bytes,
        index_bytes(&out.join("j1")),
        "index bytes depend on --jobs"
    );
    let m = manifest(&out.join("j2"));
    let files = m["files"].as_array().unwrap();
    assert!(
        files.iter().any(|f| f["path"] == "wids-index.json"),
        "not listed in the manifest: {m}"
    );
    let index: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(index["__kind__"], "wids-shard-index-v1");
    let shards: Vec<&serde_json::Value> = files
        .iter()
        .filter(|f| f["path"].as_str().unwrap().ends_with(".tar"))
        .collect();
    let list = index["shardlist"].as_array().unwrap();
    assert!(shards.len() > 1 && list.len() == shards.len(), "{index}");
    for (entry, shard) in list.iter().zip(&shards) {
        assert_eq!(entry["url"], shard["path"]);
        assert_eq!(entry["nsamples"], shard["samples"]);
        assert_eq!(entry["filesize"], shard["size"]);
    }
    // `index` over the same shards writes the same bytes, listed as pack listed them.
    let before = std::fs::read(out.join("j1/manifest.json")).unwrap();
    std::fs::remove_file(out.join("j1/wids-index.json")).unwrap();
    let (code, report) = run_json(&["index", out.join("j1").to_str().unwrap(), "--for", "wids"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["shards"].as_u64(), Some(shards.len() as u64));
    assert_eq!(index_bytes(&out.join("j1")), bytes);
    assert_eq!(std::fs::read(out.join("j1/manifest.json")).unwrap(), before);

    // Indexed after packing without --index: the manifest lists it, verify passes.
    let (code, packed) = pack(&out.join("plain"), &[]);
    assert_eq!(code, 0, "{packed}");
    let (code, report) = run_json(&[
        "index",
        out.join("plain").to_str().unwrap(),
        "--for",
        "wids",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(index_bytes(&out.join("plain")), bytes);
    let root = report["root_sha256"].as_str().unwrap();
    assert_ne!(
        Some(root),
        packed["root_sha256"].as_str(),
        "a new file, a new root"
    );
    assert_eq!(manifest(&out.join("plain"))["root_sha256"], root);
    let o = run(&["verify", out.join("plain").to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        text(&o.stdout) + &text(&o.stderr)
    );
}

#[test]
fn a_split_run_writes_the_same_index() {
    let out = Tree::new();
    assert_eq!(pack(&out.join("one"), &["--index", "wids"]).0, 0);
    let split = out.join("split");
    for i in ["0", "1"] {
        let (code, report) = pack(
            &split,
            &["--index", "wids", "--task-index", i, "--task-count", "2"],
        );
        assert_eq!(code, 0, "{report}");
    }
    let (code, report) = run_json(&["merge", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(index_bytes(&split), index_bytes(&out.join("one")));
    assert_eq!(manifest(&split), manifest(&out.join("one")));
}

#[test]
fn index_is_refused_where_wids_cannot_use_it() {
    let out = Tree::new();
    for (extra, says) in [
        (&["--format", "mds", "--index", "wids"][..], "--index"),
        (&["--index", "lance"][..], "unknown index `lance`"),
        (
            &["--compression", "gz", "--index", "wids"][..],
            "wids maps plain .tar files",
        ),
    ] {
        let (code, report) = pack(&out.join("x"), extra);
        assert_eq!(code, 2, "{extra:?}: {report}");
        assert!(
            report["error"]["message"].as_str().unwrap().contains(says),
            "{report}"
        );
        assert!(!out.join("x/wids-index.json").exists());
    }
    let o = run(&["index", samples().to_str().unwrap(), "--for", "lance"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn index_names_a_truncated_shard_and_writes_nothing() {
    let out = Tree::new();
    let dir = out.join("o");
    assert_eq!(pack(&dir, &[]).0, 0);
    let shard = dir.join("shard-000001.tar");
    let size = std::fs::metadata(&shard).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&shard)
        .unwrap();
    f.set_len(size - 1500).unwrap();
    let (code, report) = run_json(&["index", dir.to_str().unwrap(), "--for", "wids"]);
    assert_eq!(code, 1, "{report}");
    let damaged = report["damaged"][0].as_str().unwrap();
    assert!(
        damaged.contains("shard-000001.tar") && damaged.contains("byte"),
        "{report}"
    );
    assert!(report["indexes"].as_array().unwrap().is_empty());
    assert!(!dir.join("wids-index.json").exists());
    let o = run(&["index", dir.to_str().unwrap(), "--for", "wids"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("shard-000001.tar"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn verify_finds_a_stale_index() {
    let out = Tree::new();
    let dir = out.join("o");
    assert_eq!(pack(&dir, &["--index", "wids"]).0, 0);
    let path = dir.join("wids-index.json");
    let mut index: serde_json::Value = serde_json::from_slice(&index_bytes(&dir)).unwrap();
    let n = index["shardlist"][0]["nsamples"].as_u64().unwrap();
    index["shardlist"][0]["nsamples"] = (n + 1).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&index).unwrap()).unwrap();
    // A manifest made again over the stale index: its bytes match, its content does not.
    let o = run(&["manifest", dir.to_str().unwrap(), "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    assert!(report.to_string().contains("stale"), "{report}");
}
