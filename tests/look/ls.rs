//! `ls` and `stats`: exact listings of each shard format, checkpoints and token files,
//! and duplicate keys counted.

use super::util::{ok, pack, small};
use crate::util::*;

#[test]
fn ls_and_stats_of_webdataset_shards_are_exact() {
    let t = small();
    pack(&t, "wds", &["--shard-size", "4KiB"]);
    let wds = t.s("wds");
    assert_eq!(
        ok(&["ls", &wds]),
        format!(
            "SHARD             BYTES  SAMPLES  FIRST   LAST    FIELDS
shard-000000.tar   3072        1  a/0001  a/0001  json,txt
shard-000001.tar   3072        1  a/0002  a/0002  json,txt
shard-000002.tar   4096        2  a/0003  b/0001  json,txt
{wds} webdataset, 3 shards, 4 samples, 10240 bytes
"
        )
    );
    assert_eq!(
        ok(&["ls", &wds, "-l"]),
        "KEY     SHARD             FIELDS
a/0001  shard-000000.tar  json=8 txt=7
a/0002  shard-000001.tar  json=8 txt=7
a/0003  shard-000002.tar  json=8 txt=7
b/0001  shard-000002.tar  txt=1
"
    );
    assert_eq!(
        ok(&["stats", &wds]),
        format!(
            "{wds} webdataset: 4 samples in 3 shards, 46 bytes of fields
FIELD  SAMPLES  BYTES  MIN  MEDIAN  P99  MAX
json         3     24    8       8    8    8
txt          4     22    1       7    7    7
duplicate keys: none
"
        )
    );
    let (code, report) = run_json(&["ls", &wds]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["kind"], "webdataset");
    assert_eq!(report["totals"]["samples"], 4);
    assert_eq!(report["shards"][2]["name"], "shard-000002.tar");
    assert_eq!(report["shards"][2]["first_key"], "a/0003");
    assert_eq!(report["shards"][2]["last_key"], "b/0001");
    assert_eq!(
        report["shards"][2]["fields"],
        serde_json::json!(["json", "txt"])
    );
    let (_, report) = run_json(&["ls", &wds, "-l"]);
    assert_eq!(
        report["samples"][3],
        serde_json::json!({"fields": {"txt": 1}, "key": "b/0001", "shard": "shard-000002.tar"})
    );
    let (_, report) = run_json(&["stats", &wds]);
    assert_eq!(
        report["fields"]["txt"],
        serde_json::json!({"bytes": 22, "max": 7, "median": 7, "min": 1, "p99": 7, "samples": 4})
    );
    assert_eq!(report["samples"], 4);
    assert_eq!(report["duplicate_keys"]["count"], 0);
}

#[test]
fn ls_lists_mds_and_parquet_samples_as_webdataset_does() {
    let t = small();
    t.file("raw/b/0001.json", "{}\n");
    pack(&t, "wds", &[]);
    pack(&t, "mds", &["--format", "mds"]);
    pack(&t, "pq", &["--format", "parquet"]);
    let strip = |s: String| -> Vec<String> {
        s.lines()
            .skip(1)
            .map(|l| {
                let parts: Vec<&str> = l.split("  ").filter(|p| !p.is_empty()).collect();
                format!("{} {}", parts[0], parts[2])
            })
            .collect()
    };
    let wds = strip(ok(&["ls", &t.s("wds"), "-l"]));
    assert_eq!(wds.len(), 4);
    assert_eq!(wds[3], "b/0001 json=3 txt=1");
    assert_eq!(strip(ok(&["ls", &t.s("mds"), "-l"])), wds);
    assert_eq!(strip(ok(&["ls", &t.s("pq"), "-l"])), wds);
    assert!(
        ok(&["ls", &t.s("mds")]).starts_with(
            "SHARD            BYTES  SAMPLES  FIRST   LAST    FIELDS\nshard.00000.mds  "
        )
    );
    let (_, report) = run_json(&["stats", &t.s("pq")]);
    assert_eq!(report["kind"], "parquet");
    assert_eq!(report["fields"]["json"]["samples"], 4);
}

#[test]
fn ls_lists_checkpoint_tensors() {
    let dir = fixtures().join("sharded");
    assert_eq!(
        ok(&["ls", dir.to_str().unwrap()]),
        "FILE                              TENSOR  DTYPE    SHAPE     BYTES
model-00001-of-00003.safetensors  idx     I64      [10]         80
model-00001-of-00003.safetensors  w       F32      [128,64]  32768
model-00001-of-00003.safetensors  b       BF16     [256]       512
model-00002-of-00003.safetensors  zeros   F32      [2048]     8192
model-00002-of-00003.safetensors  f8      F8_E4M3  [16]         16
model-00002-of-00003.safetensors  mask    U8       [4096]     4096
model-00003-of-00003.safetensors  step    I64      []            8
model-00003-of-00003.safetensors  h       F16      [64]        128
"
    );
    let model = fixtures().join("plain/model.pt");
    let (code, report) = run_json(&["ls", model.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["kind"], "checkpoint");
    assert_eq!(
        report["tensors"][0],
        serde_json::json!({"bytes": 32768, "dtype": "F32", "file": "model.pt", "name": "w", "shape": [128, 64]})
    );
    // A DCP checkpoint: whole tensors from .metadata, not each data file's chunks.
    for dir in ["dcp2", "dcp_st"] {
        let dir = fixtures().join(dir);
        assert_eq!(
            ok(&["ls", dir.to_str().unwrap()]),
            "FILE       TENSOR   DTYPE  SHAPE     BYTES
.metadata  model.w  F32    [128,64]  32768
.metadata  model.b  F32    [8]          32
"
        );
    }
    // A legacy torch file lists what its zip twin lists.
    let legacy = fixtures().join("plain/legacy.pt");
    let tensors = |path: &std::path::Path| {
        let (code, mut report) = run_json(&["ls", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{report}");
        let mut list = report["tensors"].take();
        for t in list.as_array_mut().unwrap() {
            t.as_object_mut().unwrap().remove("file");
        }
        list
    };
    let listed = tensors(&legacy);
    assert_eq!(listed.as_array().unwrap().len(), 9);
    assert_eq!(listed, tensors(&model));
}

#[test]
fn ls_lists_token_files() {
    let t = Tree::new();
    let docs: String = (0..10)
        .map(|i| format!("{{\"text\": \"document number {i} says hello\"}}\n"))
        .collect();
    t.file("in/a.jsonl", docs);
    for format in ["megatron", "llmc", "nanogpt"] {
        let out = t.s(format);
        let o = run(&[
            "tokenize",
            &t.s("in"),
            &out,
            "-t",
            "gpt2",
            "--format",
            format,
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let m = manifest(&t.join(format));
        let bin = m["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(".bin"))
            .unwrap();
        let (code, report) = run_json(&["ls", &out]);
        assert_eq!(code, 0, "{report}");
        assert_eq!(report["kind"], "tokens");
        assert_eq!(report["files"][0]["format"], format);
        assert_eq!(report["files"][0]["dtype"], "uint16");
        assert_eq!(report["files"][0]["tokens"], bin["tokens"]);
        assert_eq!(report["files"][0]["documents"], bin["documents"]);
        let path = bin["path"].as_str().unwrap();
        let documents = bin["documents"]
            .as_u64()
            .map_or_else(|| "-".to_string(), |d| d.to_string());
        let tokens = bin["tokens"].as_u64().unwrap().to_string();
        let row = format!("{path}  {format}  uint16  {documents}  {tokens}");
        let listed = ok(&["ls", &out]);
        let lines: Vec<String> = listed
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join("  "))
            .collect();
        assert_eq!(
            lines,
            ["FILE  FORMAT  DTYPE  DOCUMENTS  TOKENS".to_string(), row],
            "{listed}"
        );
    }
}

/// A tar shard written member by member, as another tool would.
fn tar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in members {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

#[test]
fn stats_counts_duplicate_keys_across_shards() {
    let t = Tree::new();
    t.file(
        "t/d-000000.tar",
        tar_of(&[
            ("a/1.txt", b"one"),
            ("b/1.txt", b"two"),
            ("c/1.txt", b"three"),
        ]),
    );
    t.file(
        "t/d-000001.tar",
        tar_of(&[("c/1.txt", b"again"), ("d/1.txt", b"d"), ("b/1.txt", b"2")]),
    );
    let o = run(&["stats", &t.s("t")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.ends_with("duplicate keys: 2 (2 repeats): `c/1`, `b/1`\n"),
        "{out}"
    );
    let (_, report) = run_json(&["stats", &t.s("t")]);
    assert_eq!(
        report["duplicate_keys"],
        serde_json::json!({"count": 2, "first": ["c/1", "b/1"], "repeats": 2})
    );
    // cat answers with the first, as readers that drop the repeat do.
    let o = run(&["cat", &t.s("t"), "c/1", "txt"]);
    assert_eq!(o.stdout, b"three");
}
