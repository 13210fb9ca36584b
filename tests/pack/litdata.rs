//! `pack --format litdata` and `--input-format litdata`, driven end to end: chunks and
//! `index.json` as `litdata.optimize` writes them, rollover, `--jobs`, `verify` of damage,
//! datasets we wrote (and hand-made ones) read back. What holds for every format is in
//! tests/pack/conformance.rs; the real litdata reads and writes in litdata_interop.rs;
//! datasets stored the other ways optimize stores them (Arrow footers, zstd wraps, `json`
//! leaves) in litdata_stored.rs.

use std::path::Path;

use serde_json::Value;

use crate::util::*;

pub(super) fn pack(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    cmd()
        .args(["pack", input.to_str().unwrap(), output.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

pub(super) fn pack_ok(input: &Path, output: &Path, extra: &[&str]) -> String {
    let o = pack(input, output, extra);
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stderr)
}

pub(super) fn index(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap()
}

/// A chunk of items, each given as its leaves' bytes.
pub(super) fn chunk(items: &[Vec<&[u8]>]) -> Vec<u8> {
    let records: Vec<Vec<u8>> = items
        .iter()
        .map(|leaves| {
            let mut r = Vec::new();
            for leaf in leaves {
                r.extend_from_slice(&(leaf.len() as u32).to_le_bytes());
            }
            for leaf in leaves {
                r.extend_from_slice(leaf);
            }
            r
        })
        .collect();
    let n = records.len() as u32;
    let mut out = n.to_le_bytes().to_vec();
    let mut at = 4 + 4 * (n + 1);
    out.extend_from_slice(&at.to_le_bytes());
    for r in &records {
        at += r.len() as u32;
        out.extend_from_slice(&at.to_le_bytes());
    }
    for r in &records {
        out.extend_from_slice(r);
    }
    out
}

/// A LitData dataset of one chunk: a flat dict of `keys` stored with `formats`.
pub(super) fn hand_made(
    keys: &[&str],
    formats: &[&str],
    items: &[Vec<&[u8]>],
    config: Value,
) -> Tree {
    let tree = Tree::new();
    let data = chunk(items);
    let leaf = r#"{"type": null, "context": null, "children_spec": []}"#;
    let spec = format!(
        r#"[1, {{"type": "builtins.dict", "context": {}, "children_spec": [{}]}}]"#,
        serde_json::to_string(&serde_json::to_string(keys).unwrap()).unwrap(),
        vec![leaf; keys.len()].join(", ")
    );
    let mut cfg = serde_json::json!({
        "chunk_bytes": 64_000_000, "chunk_size": null, "compression": null,
        "data_format": formats, "data_spec": spec, "encryption": null,
        "item_loader": "PyTreeLoader",
    });
    for (k, v) in config.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let index = serde_json::json!({
        "chunks": [{"chunk_bytes": data.len(), "chunk_size": items.len(), "dim": null, "filename": "chunk-0-0.bin"}],
        "config": cfg,
    });
    tree.file("chunk-0-0.bin", data)
        .file("index.json", serde_json::to_vec(&index).unwrap());
    tree
}

#[test]
fn chunks_and_index_are_optimizes_and_roll_over_within_the_shard_size() {
    let input = corpus(60, 6000);
    let out = Tree::new();
    let dir = out.join("lit");
    pack_ok(
        input.path(),
        &dir,
        &["--format", "litdata", "--shard-size", "16KiB"],
    );
    let idx = index(&dir);
    let chunks = idx["chunks"].as_array().unwrap();
    assert!(chunks.len() > 3, "{idx}");
    let mut total = 0;
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c["filename"], format!("chunk-0-{i}.bin"));
        let size = std::fs::metadata(dir.join(c["filename"].as_str().unwrap()))
            .unwrap()
            .len();
        assert_eq!(c["chunk_bytes"], size);
        assert!(size <= 16 * 1024, "{c}");
        assert_eq!(c["dim"], Value::Null);
        total += c["chunk_size"].as_u64().unwrap();
    }
    assert_eq!(total, 60);
    let config = &idx["config"];
    // Fields by name: `json` and `txt` are text (str), `bin` bytes; the key first.
    assert_eq!(
        config["data_format"],
        serde_json::json!(["str", "bytes", "str", "str"])
    );
    assert!(
        config["data_spec"]
            .as_str()
            .unwrap()
            .starts_with(r#"[1, {"type": "builtins.dict", "context": "[\"__key__\", \"bin\", \"json\", \"txt\"]""#),
        "{config}"
    );
    assert_eq!(config["chunk_bytes"], 16 * 1024);
    assert_eq!(config["item_loader"], "PyTreeLoader");
    let raw = text(&std::fs::read(dir.join("index.json")).unwrap());
    assert!(
        raw.starts_with(r#"{"chunks": [{"chunk_bytes": "#) && !raw.contains("updated_at"),
        "json.dump(sort_keys=True) style, no time: {raw}"
    );
    // The first chunk: N, N+1 offsets, then items of 4 sizes and 4 values.
    let data = std::fs::read(dir.join("chunk-0-0.bin")).unwrap();
    let n = u32::from_le_bytes(data[0..4].try_into().unwrap()) as usize;
    assert_eq!(n as u64, chunks[0]["chunk_size"].as_u64().unwrap());
    let offset =
        |i: usize| u32::from_le_bytes(data[4 + 4 * i..8 + 4 * i].try_into().unwrap()) as usize;
    assert_eq!(offset(0), 4 + 4 * (n + 1));
    assert_eq!(offset(n), data.len());
    let item = &data[offset(0)..offset(1)];
    let key_len = u32::from_le_bytes(item[0..4].try_into().unwrap()) as usize;
    assert_eq!(&item[16..16 + key_len], b"c00/sample_00000");

    let (code, v) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["samples"], 60);

    // The default chunk size is optimize's usual "64MB"; a prefix cannot rename chunks.
    let one = out.join("one");
    pack_ok(input.path(), &one, &["--format", "litdata"]);
    assert_eq!(index(&one)["config"]["chunk_bytes"], 64_000_000);
    let o = pack(
        input.path(),
        &out.join("p"),
        &["--format", "litdata", "--prefix", "x"],
    );
    assert!(!o.status.success() && text(&o.stderr).contains("chunk names are fixed"));
}

#[test]
fn output_is_byte_identical_for_any_jobs() {
    let input = corpus(120, 6000);
    let out = Tree::new();
    let at = |name: &str, jobs: &str| {
        let dir = out.join(name);
        pack_ok(
            input.path(),
            &dir,
            &["--format", "litdata", "--shard-size", "16KiB", "-j", jobs],
        );
        snapshot(&dir)
    };
    let j1 = at("j1", "1");
    assert!(j1.len() > 8, "{:?}", j1.keys());
    assert!(j1 == at("j2", "2"), "-j 1 vs -j 2");
}

#[test]
fn text_fields_hold_only_utf8_and_every_item_has_every_field() {
    let input = Tree::new();
    input
        .file("a.txt", "fine")
        .file("a.bin", [0u8, 1])
        .file("b.txt", [0xffu8, 0xfe])
        .file("b.bin", [2u8])
        .file("c.bin", [3u8]);
    let out = Tree::new();
    let dir = out.join("lit");
    let o = pack(input.path(), &dir, &["--format", "litdata", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let skipped = report["skipped"].to_string();
    assert!(
        skipped.contains("not valid UTF-8") || skipped.contains("UTF-8"),
        "{report}"
    );
    assert!(skipped.contains("has no `txt` field"), "{report}");
    assert_eq!(report["samples"], 1, "{report}");
    // `--column FIELD:bytes` stores any bytes; an encoding litdata has no leaf for is refused.
    let dir = out.join("bytes");
    let o = pack(
        input.path(),
        &dir,
        &[
            "--format",
            "litdata",
            "--column",
            "txt:bytes",
            "--fields",
            "txt,bin",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        index(&dir)["config"]["data_format"],
        serde_json::json!(["str", "bytes", "bytes"])
    );
    let o = pack(
        input.path(),
        &out.join("int"),
        &["--format", "litdata", "--column", "bin:int"],
    );
    assert!(
        !o.status.success() && text(&o.stderr).contains("LitData fields are `str` or `bytes`"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn verify_names_a_damaged_chunk_and_an_index_that_disagrees() {
    let input = corpus(60, 6000);
    let out = Tree::new();
    let clean = out.join("clean");
    pack_ok(
        input.path(),
        &clean,
        &["--format", "litdata", "--shard-size", "16KiB"],
    );
    let damaged = |name: &str, without_manifest: bool, change: &dyn Fn(&Path)| {
        let dir = out.join(name);
        copy_dir(&clean, &dir);
        if without_manifest {
            std::fs::remove_file(dir.join("manifest.json")).unwrap();
            std::fs::remove_file(dir.join("SHA256SUMS")).unwrap();
        }
        change(&dir);
        let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
        assert_eq!(code, 1, "{name}: {report}");
        findings(&report)
            .into_iter()
            .map(|(kind, path, _)| format!("{kind} {path}"))
            .collect::<Vec<_>>()
    };
    let edit = |dir: &Path, rel: &str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = std::fs::read(dir.join(rel)).unwrap();
        f(&mut bytes);
        std::fs::write(dir.join(rel), bytes).unwrap();
    };
    for without in [false, true] {
        let found = damaged(&format!("cut-{without}"), without, &|d| {
            edit(d, "chunk-0-1.bin", &|b| b.truncate(b.len() - 10))
        });
        assert!(
            found.contains(&"truncated chunk-0-1.bin".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(&"index_mismatch chunk-0-1.bin".to_string()),
            "{found:?}"
        );
        // An offset that points inside the next item: its leaf sizes disagree.
        let found = damaged(&format!("offset-{without}"), without, &|d| {
            edit(d, "chunk-0-2.bin", &|b| b[8] = b[8].wrapping_add(1))
        });
        assert!(
            found.contains(&"bad_record chunk-0-2.bin".to_string()),
            "{found:?}"
        );
        let found = damaged(&format!("index-{without}"), without, &|d| {
            let mut idx = index(d);
            let n = idx["chunks"][0]["chunk_size"].as_u64().unwrap();
            idx["chunks"][0]["chunk_size"] = Value::from(n + 1);
            std::fs::write(d.join("index.json"), serde_json::to_vec(&idx).unwrap()).unwrap();
        });
        assert!(
            found.contains(&"sample_count_mismatch chunk-0-0.bin".to_string()),
            "{found:?}"
        );
        let found = damaged(&format!("gone-{without}"), without, &|d| {
            std::fs::remove_file(d.join("chunk-0-3.bin")).unwrap()
        });
        assert!(
            found.contains(&"missing_file chunk-0-3.bin".to_string()),
            "{found:?}"
        );
    }
}

#[test]
fn a_litdata_dataset_we_wrote_packs_back_to_the_same_bytes() {
    let input = corpus(40, 6000);
    let out = Tree::new();
    let lit = out.join("lit");
    pack_ok(
        input.path(),
        &lit,
        &["--format", "litdata", "--shard-size", "16KiB"],
    );
    let chunks = |dir: &Path| {
        let mut s = snapshot(dir);
        s.retain(|name, _| name.ends_with(".bin") || name == "index.json");
        s
    };
    // Auto-detected (a LitData index.json, not MDS's), read chunk by chunk.
    let again = out.join("again");
    pack_ok(
        &lit,
        &again,
        &["--format", "litdata", "--shard-size", "16KiB"],
    );
    assert!(chunks(&lit) == chunks(&again), "litdata -> litdata");
    let mds = out.join("mds");
    pack_ok(&lit, &mds, &["--format", "mds"]);
    let back = out.join("back");
    pack_ok(
        &mds,
        &back,
        &["--format", "litdata", "--shard-size", "16KiB"],
    );
    assert!(chunks(&lit) == chunks(&back), "litdata -> mds -> litdata");
    // To WebDataset: every file of the input, same key and bytes.
    let wds = out.join("wds");
    pack_ok(&lit, &wds, &["--input-format", "litdata"]);
    let o = run(&["cat", lit.to_str().unwrap(), "c03/sample_00010", "bin"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        o.stdout,
        std::fs::read(input.join("c03/sample_00010.bin")).unwrap()
    );
    let listing = text(&run(&["ls", lit.to_str().unwrap()]).stdout);
    assert!(
        listing.contains("chunk-0-0.bin") && listing.contains("litdata"),
        "{listing}"
    );
    let stats = text(&run(&["stats", lit.to_str().unwrap()]).stdout);
    assert!(stats.contains("40 samples"), "{stats}");
}

#[test]
fn input_items_become_fields_and_unreadable_datasets_are_refused() {
    // No __key__: keys are item indices; int, float, bool, numpy leaves as text and .npy.
    let n = 7i64.to_le_bytes();
    let f = 0.25f64.to_le_bytes();
    let arr = [1u8, 0, 2, 0];
    let ds = hand_made(
        &["n", "f", "ok", "arr", "Name"],
        &["int", "float", "bool", "no_header_numpy:1", "str"],
        &[
            vec![&n, &f, &[1], &arr, b"x"],
            vec![&n, &f, &[0], &arr, b"y"],
        ],
        serde_json::json!({}),
    );
    let out = Tree::new();
    let wds = out.join("wds");
    pack_ok(ds.path(), &wds, &[]);
    let tar = std::fs::read(wds.join("shard-000000.tar")).unwrap();
    let t = text(&tar);
    for member in [
        "000000000.n",
        "000000001.f",
        "000000000.ok",
        "000000000.arr",
        "000000000.name",
    ] {
        assert!(t.contains(member), "{member}");
    }
    let cat =
        |key: &str, field: &str| run(&["cat", ds.path().to_str().unwrap(), key, field]).stdout;
    assert_eq!(cat("000000000", "n"), b"7");
    assert_eq!(cat("000000001", "f"), b"0.25");
    assert_eq!(cat("000000001", "ok"), b"false");
    assert!(
        text(&cat("000000000", "arr"))
            .contains("'descr': '<i2', 'fortran_order': False, 'shape': (2,)")
    );

    let refused = |formats: &[&str], config: Value, want: &str| {
        let ds = hand_made(&["__key__", "v"], formats, &[vec![b"k", b"v"]], config);
        let o = pack(
            ds.path(),
            &out.join("refused"),
            &["--input-format", "litdata"],
        );
        let stderr = text(&o.stderr);
        assert!(
            !o.status.success() && stderr.contains(want),
            "{want}: {stderr}"
        );
        assert!(
            stderr.contains("index.json") || stderr.contains("chunk-0-0.bin"),
            "{stderr}"
        );
    };
    refused(
        &["str", "tensor"],
        serde_json::json!({}),
        "`tensor` serializer",
    );
    refused(
        &["str", "pickle"],
        serde_json::json!({}),
        "`pickle` serializer",
    );
    refused(
        &["str", "bytes"],
        serde_json::json!({"compression": "gzip"}),
        "compressed with `gzip`, which shardsmith does not read (it reads zstd)",
    );
    refused(
        &["str", "bytes"],
        serde_json::json!({"encryption": {"a": 1}}),
        "encrypted chunks",
    );
    refused(
        &["str", "str"],
        serde_json::json!({"ipc_compression": "snappy"}),
        "Arrow footers are compressed with \"snappy\"",
    );
}
