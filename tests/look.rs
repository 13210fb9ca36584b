//! `shardsmith ls`, `cat` and `stats` on datasets `pack` and `tokenize` made and on the
//! checkpoint fixtures: exact output, field bytes equal to the original files, the
//! sample tar read back, only the holding shard read, errors with their messages.

use std::collections::BTreeMap;
use std::io::Read;

use crate::util::*;

/// Four small samples whose shard layout at `--shard-size 4KiB` is fixed.
fn small() -> Tree {
    let t = Tree::new();
    for i in 1..=3 {
        t.file(&format!("raw/a/000{i}.txt"), format!("hello {i}"));
        t.file(&format!("raw/a/000{i}.json"), format!("{{\"i\":{i}}}\n"));
    }
    t.file("raw/b/0001.txt", "x");
    t
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn pack(t: &Tree, out: &str, extra: &[&str]) {
    let mut args = vec!["pack", &t.s("raw").leak()[..], &t.s(out).leak()[..], "-q"];
    args.extend_from_slice(extra);
    ok(&args);
}

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

/// Every file of the corpus by key and field.
fn originals(tree: &Tree) -> BTreeMap<(String, String), Vec<u8>> {
    snapshot(tree.path())
        .into_iter()
        .map(|(rel, bytes)| {
            let (key, field) = rel.split_once('.').unwrap();
            ((key.to_string(), field.to_string()), bytes)
        })
        .collect()
}

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

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn ls_and_cat_read_a_dataset_in_a_bucket_one_shard_per_sample() {
    let Some(s3) = crate::s3::S3::start() else {
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

/// The kinds whose bytes `cat` gives exactly as expected.json holds them (floats are
/// compared as numbers and arrays as arrays by the Python checkers, not byte for byte).
const EXACT_KINDS: &[&str] = &[
    "bytes",
    "str",
    "json",
    "int",
    "int8",
    "uint16",
    "int32",
    "uint64",
    "str_int",
    "str_float",
    "str_decimal",
    "png",
    "jpeg",
];

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn ls_stats_and_cat_read_what_the_real_tools_wrote() {
    use base64::Engine;
    let t = Tree::new();
    let script = crate::interop::interop_dir().join("make_convert_inputs.py");
    let Some(_) = crate::interop::run_python(&[script.to_str().unwrap(), &t.s("in")], &[]) else {
        return;
    };
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.join("in/expected.json")).unwrap()).unwrap();
    for (input, want) in expected.as_object().unwrap() {
        let dir = t.s(&format!("in/{input}"));
        let (code, report) = run_json(&["ls", &dir, "-l"]);
        assert_eq!(code, 0, "{input}: {report}");
        let samples = report["samples"].as_array().unwrap();
        let want = want["samples"].as_array().unwrap();
        let keys = |list: &[serde_json::Value]| -> Vec<String> {
            list.iter()
                .map(|s| s["key"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(keys(samples), keys(want), "{input}");
        let (_, stats) = run_json(&["stats", &dir]);
        assert_eq!(stats["samples"], want.len(), "{input}");
        assert_eq!(stats["duplicate_keys"]["count"], 0, "{input}");
        for (i, (got, w)) in samples.iter().zip(want).enumerate() {
            let fields = w["fields"].as_object().unwrap();
            let mut names: Vec<&String> = fields.keys().collect();
            names.sort();
            let listed: Vec<&String> = got["fields"].as_object().unwrap().keys().collect();
            assert_eq!(listed, names, "{input} {}", w["key"]);
            for (field, value) in fields {
                if !EXACT_KINDS.contains(&value["kind"].as_str().unwrap()) {
                    continue;
                }
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(value["b64"].as_str().unwrap())
                    .unwrap();
                assert_eq!(
                    got["fields"][field],
                    bytes.len(),
                    "{input} {} {field}",
                    w["key"]
                );
                if i % 9 == 0 {
                    let o = run(&["cat", &dir, w["key"].as_str().unwrap(), field]);
                    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
                    assert_eq!(o.stdout, bytes, "{input} {} {field}", w["key"]);
                }
            }
        }
    }
}
