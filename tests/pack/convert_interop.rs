//! Any format in, any format out (issue 16): WebDataset and MDS inputs written by the real
//! tools (webdataset's ShardWriter, GNU tar, streaming's MDSWriter and merge_index: see
//! `tests/interop/make_convert_inputs.py`) packed into every format, each output read
//! back by the real reader and compared with the input's samples
//! (`tests/interop/check_convert.py`); a lossless raw → wds → mds → parquet → wds round
//! trip and compressed (gz, zstd) shards converted back to the same files; the errors
//! bad inputs give, exactly.
//!
//! The interop test needs `SHARDSMITH_PYTHON`, as `tests/interop.rs` explains (without
//! it the test says so, and fails under CI); the others are pure Rust. The interop test
//! runs every conversion and then reports all that failed (pack's error, or the
//! checker's first differences), not just the first.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use crate::interop::{interop_dir, python, run_python};
use crate::util::*;

/// The inputs `make_convert_inputs.py` writes, each a name in its expected.json.
const INPUTS: [&str; 13] = [
    "wds_plain",
    "wds_gz",
    "gnu_tar",
    "mds_none",
    "mds_zstd",
    "mds_zstd7",
    "mds_gz",
    "mds_bz2",
    "mds_br",
    "mds_snappy",
    "mds_merged",
    "mds_nokey",
    "mds_typed",
];

const FORMATS: [&str; 3] = ["webdataset", "mds", "parquet"];

/// One conversion: INPUT (as `pack` is given it), the expected.json entry it must equal,
/// and the extra `pack` arguments.
struct Case {
    input: String,
    expected: &'static str,
    format: &'static str,
    extra: Vec<String>,
    /// Extra arguments of `check_convert.py` (`--fields F,G` with `pack --fields F,G`).
    check_args: Vec<&'static str>,
    label: String,
}

/// Runs `tests/interop/SCRIPT ARGS...` with the interop env as [`run_python`] does, but
/// returns whether it exited 0 and its output instead of asserting, so that one test can
/// report every failing conversion at once.
fn run_check(args: &[&str]) -> (bool, String) {
    let interop = interop_dir();
    let path = std::env::join_paths([interop.join("torchstub"), interop.clone()]).unwrap();
    let o = std::process::Command::new(python().expect("checked by the caller"))
        .arg(interop.join("check_convert.py"))
        .args(args)
        .env("PYTHONPATH", path)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!("{}{}", text(&o.stdout), text(&o.stderr)),
    )
}

/// The failures of one case (pack, then the real reader), or none.
fn convert(case: &Case, inputs: &Path, outputs: &Path) -> Option<String> {
    let out = outputs.join(&case.label);
    let out = out.to_str().unwrap();
    let mut pack = cmd();
    pack.args(["pack", &case.input, out, "--format", case.format]);
    if !case.extra.iter().any(|a| a == "--shard-size") {
        pack.args(["--shard-size", "8KiB"]);
    }
    let o = pack.args(&case.extra).output().unwrap();
    if !o.status.success() {
        return Some(format!(
            "{}: pack exited {:?}: {}",
            case.label,
            o.status.code(),
            text(&o.stderr).trim_end()
        ));
    }
    let expected = inputs.join("expected.json");
    let mut args = vec![expected.to_str().unwrap(), case.expected, out];
    args.extend(&case.check_args);
    let (ok, output) = run_check(&args);
    if ok && output.contains(" passed, 0 failed") {
        return None;
    }
    // The first lines say what differs; the last one counts.
    let lines: Vec<&str> = output.lines().collect();
    let mut shown: Vec<&str> = lines.iter().take(12).copied().collect();
    if lines.len() > 12 {
        shown.push("...");
        shown.push(lines[lines.len() - 1]);
    }
    Some(format!("{}: {}", case.label, shown.join("\n    ")))
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn inputs_written_by_the_real_tools_convert_to_every_format() {
    if python().is_none() {
        return;
    }
    let inputs = Tree::new();
    let made = run_python(
        &[
            interop_dir()
                .join("make_convert_inputs.py")
                .to_str()
                .unwrap(),
            inputs.path().to_str().unwrap(),
        ],
        &[],
    )
    .unwrap();
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(inputs.join("expected.json")).unwrap()).unwrap();
    let mut names: Vec<&str> = expected
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    let mut want = INPUTS.to_vec();
    want.sort_unstable();
    assert_eq!(names, want, "the generator's inputs:\n{made}");

    let mut cases = Vec::new();
    for input in INPUTS {
        for format in FORMATS {
            cases.push(Case {
                input: inputs.s(input),
                expected: input,
                format,
                extra: vec![],
                check_args: vec![],
                label: format!("{input}-to-{format}"),
            });
        }
    }
    // A brace pattern of shards, as webdataset takes them.
    for format in ["mds", "parquet"] {
        cases.push(Case {
            input: inputs.s("wds_plain/shard-{000000..000002}.tar"),
            expected: "wds_plain",
            format,
            extra: vec![],
            check_args: vec![],
            label: format!("wds_plain-braces-to-{format}"),
        });
    }
    // The input kind named rather than detected.
    cases.push(Case {
        input: inputs.s("gnu_tar"),
        expected: "gnu_tar",
        format: "mds",
        extra: ["--input-format", "webdataset"].map(String::from).to_vec(),
        check_args: vec![],
        label: "gnu_tar-named-to-mds".into(),
    });
    cases.push(Case {
        input: inputs.s("mds_merged"),
        expected: "mds_merged",
        format: "parquet",
        extra: ["--input-format", "mds"].map(String::from).to_vec(),
        check_args: vec![],
        label: "mds_merged-named-to-parquet".into(),
    });
    // MDS → MDS re-sharded with another size and compression keeps every value and
    // encoding.
    cases.push(Case {
        input: inputs.s("mds_typed"),
        expected: "mds_typed",
        format: "mds",
        extra: ["--compression", "snappy", "--max-samples", "5"]
            .map(String::from)
            .to_vec(),
        check_args: vec![],
        label: "mds_typed-to-mds-resharded".into(),
    });
    cases.push(Case {
        input: inputs.s("mds_bz2"),
        expected: "mds_bz2",
        format: "mds",
        extra: ["--compression", "br:5", "--shard-size", "64KiB"]
            .map(String::from)
            .to_vec(),
        check_args: vec![],
        label: "mds_bz2-to-mds-br-one-shard".into(),
    });
    // The typed columns Parquet has a type for (uint64 and ndarrays without a static
    // shape have none: `mds_typed-to-parquet` above needs them to convert too).
    let typed = "i8,u16,i32,f16,f32,f64,sint,sfloat,sdec,png,jpeg,arrf";
    cases.push(Case {
        input: inputs.s("mds_typed"),
        expected: "mds_typed",
        format: "parquet",
        extra: ["--fields", typed].map(String::from).to_vec(),
        check_args: vec!["--fields", typed],
        label: "mds_typed-parquet-typed-columns-to-parquet".into(),
    });

    // A list of shards (--files-from), as a list file of shard names.
    inputs.file("gnu_tar.list", "shard-000000.tar\nshard-000001.tar\n");
    cases.push(Case {
        input: inputs.s("gnu_tar"),
        expected: "gnu_tar",
        format: "parquet",
        extra: vec!["--files-from".into(), inputs.s("gnu_tar.list")],
        check_args: vec![],
        label: "gnu_tar-files-from-to-parquet".into(),
    });
    // Shuffled: the same samples in another order.
    for (input, format) in [("wds_plain", "mds"), ("mds_merged", "webdataset")] {
        cases.push(Case {
            input: inputs.s(input),
            expected: input,
            format,
            extra: ["--shuffle", "--seed", "7"].map(String::from).to_vec(),
            check_args: vec!["--any-order"],
            label: format!("{input}-shuffled-to-{format}"),
        });
    }
    // Compressed shards are decompressed into --scratch-dir when given (else beside the
    // output).
    let scratch = Tree::new();
    cases.push(Case {
        input: inputs.s("wds_gz"),
        expected: "wds_gz",
        format: "mds",
        extra: vec!["--scratch-dir".into(), scratch.s("")],
        check_args: vec![],
        label: "wds_gz-scratch-dir-to-mds".into(),
    });

    let outputs = Tree::new();
    let queue = Mutex::new(cases);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let Some(case) = queue.lock().unwrap().pop() else {
                        return;
                    };
                    if let Some(failure) = convert(&case, inputs.path(), outputs.path()) {
                        failures.lock().unwrap().push(failure);
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} conversion(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The files of the round trip: 24 samples with the same five fields (MDS columns are
/// fixed), keys with non-ASCII and directory-like parts, empty bin and txt fields (not
/// an empty jpg: `pack` leaves an empty image out).
fn round_trip_files() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for i in 0..24u64 {
        let key = match i {
            0 => "café/ü-1".to_string(),
            1 => "train/猫/κλειδί-2".to_string(),
            2 => "dots.in.dir/sample 3".to_string(),
            3 => "ünïcødé".to_string(),
            _ if i % 2 == 0 => format!("train/cat/{i:04}"),
            _ => format!("val/dog/{i:04}"),
        };
        let mut jpg = vec![0xff, 0xd8, 0xff, 0xe0];
        jpg.extend(noise(i, (i as usize * 389) % 3000));
        jpg.extend([0xff, 0xd9]);
        let bin = if i % 4 == 1 {
            Vec::new()
        } else {
            noise(100 + i, i as usize * 37)
        };
        let txt = if i == 4 || i == 9 {
            String::new()
        } else {
            format!("caption {i}: ünïcødé ✓")
        };
        files.insert(format!("{key}.jpg"), jpg);
        files.insert(format!("{key}.bin"), bin);
        files.insert(format!("{key}.txt"), txt.into_bytes());
        files.insert(
            format!("{key}.json"),
            format!("{{\"i\": {i}, \"name\": \"{key}\"}}").into_bytes(),
        );
        files.insert(
            format!("{key}.cls"),
            (i as i64 - 7).to_string().into_bytes(),
        );
    }
    files
}

/// Every member of the shards a manifest lists (plain tars), as name → bytes, in order.
fn tar_members(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let manifest = manifest(dir);
    let mut out = Vec::new();
    for file in manifest["files"].as_array().unwrap() {
        let path = dir.join(file["path"].as_str().unwrap());
        let mut archive = tar::Archive::new(std::fs::File::open(&path).unwrap());
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            out.push((name, data));
        }
    }
    out
}

fn pack_ok(args: &[&str]) {
    let o = run(args);
    assert!(
        o.status.success(),
        "pack {args:?}: exit {:?}\n{}",
        o.status.code(),
        text(&o.stderr)
    );
}

#[test]
fn raw_to_webdataset_to_mds_to_parquet_to_webdataset_gives_back_every_byte() {
    let raw = Tree::new();
    let files = round_trip_files();
    for (rel, data) in &files {
        raw.file(rel, data);
    }
    let out = Tree::new();
    let (wds1, mds, pq, wds2) = (out.s("wds1"), out.s("mds"), out.s("pq"), out.s("wds2"));
    pack_ok(&[
        "pack",
        raw.path().to_str().unwrap(),
        &wds1,
        "--format",
        "webdataset",
        "--shard-size",
        "8KiB",
    ]);
    pack_ok(&[
        "pack",
        &wds1,
        &mds,
        "--input-format",
        "webdataset",
        "--format",
        "mds",
        "--column",
        "cls:int",
        "--compression",
        "zstd",
        "--shard-size",
        "8KiB",
    ]);
    pack_ok(&[
        "pack",
        &mds,
        &pq,
        "--input-format",
        "mds",
        "--format",
        "parquet",
    ]);
    pack_ok(&[
        "pack",
        &pq,
        &wds2,
        "--input-format",
        "parquet",
        "--format",
        "webdataset",
        "--shard-size",
        "8KiB",
    ]);
    // Every step wrote several shards (but Parquet, one file at this size) and every
    // sample.
    for (dir, shards) in [(&wds1, 2), (&mds, 2), (&pq, 1), (&wds2, 2)] {
        let m = manifest(Path::new(dir));
        assert_eq!(m["totals"]["samples"], 24, "{dir}");
        assert!(m["files"].as_array().unwrap().len() >= shards, "{dir}");
    }
    // The MDS index kept cls as an int column, and Parquet as INT64.
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("mds/index.json")).unwrap()).unwrap();
    let shard = &index["shards"][0];
    let names = shard["column_names"].as_array().unwrap();
    let at = names.iter().position(|n| n == "cls").unwrap();
    assert_eq!(shard["column_encodings"][at], "int");
    let pq_file = manifest(Path::new(&pq))["files"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let reader = parquet::file::reader::SerializedFileReader::new(
        std::fs::File::open(out.join("pq").join(pq_file)).unwrap(),
    )
    .unwrap();
    let schema = parquet::file::reader::FileReader::metadata(&reader)
        .file_metadata()
        .schema_descr_ptr();
    let cls = schema.columns().iter().find(|c| c.name() == "cls").unwrap();
    assert_eq!(cls.physical_type(), parquet::basic::Type::INT64);

    let members = tar_members(Path::new(&wds2));
    let mut got = BTreeMap::new();
    for (name, data) in members {
        assert!(
            got.insert(name.clone(), data).is_none(),
            "{name} twice in the final shards"
        );
    }
    let names_differ = got.keys().ne(files.keys());
    assert!(
        !names_differ,
        "member names differ:\n  got      {:?}\n  expected {:?}",
        got.keys().collect::<Vec<_>>(),
        files.keys().collect::<Vec<_>>()
    );
    for (name, data) in &files {
        assert!(
            &got[name] == data,
            "{name}: {} bytes came back where {} went in (first difference at byte {:?})",
            got[name].len(),
            data.len(),
            got[name].iter().zip(data).position(|(a, b)| a != b)
        );
    }
}

/// Runs `pack` on a bad input; returns stderr after asserting exit 2 and no output.
fn refused(args: &[&str]) -> String {
    let o = run(args);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

#[test]
fn a_tar_that_is_not_a_tar_is_refused_naming_it() {
    let t = Tree::new();
    t.file(
        "shards/shard-000000.tar",
        "this is a text file, not a tar\n".repeat(40),
    );
    let want = format!(
        "error: input `{}` is not a tar archive: its first 512 bytes are not a tar header (bad header checksum at offset 0)\n",
        t.s("shards/shard-000000.tar")
    );
    let out = Tree::new();
    // A directory of shards, the kind named; detected; the shard named directly.
    for (n, args) in [
        &[t.s("shards"), "--input-format".into(), "webdataset".into()][..],
        &[t.s("shards"), "--format".into(), "parquet".into()][..],
        &[t.s("shards/shard-000000.tar")][..],
    ]
    .into_iter()
    .enumerate()
    {
        let o = out.s(&format!("o{n}"));
        let mut all = vec!["pack", args[0].as_str(), o.as_str()];
        all.extend(args[1..].iter().map(String::as_str));
        assert_eq!(refused(&all), want, "{all:?}");
        assert!(!out.join(&format!("o{n}/manifest.json")).exists());
    }
}

#[test]
fn an_mds_index_naming_a_missing_shard_is_refused_naming_it() {
    let raw = Tree::new();
    for (rel, data) in round_trip_files() {
        raw.file(&rel, data);
    }
    let out = Tree::new();
    pack_ok(&[
        "pack",
        raw.path().to_str().unwrap(),
        &out.s("mds"),
        "--format",
        "mds",
        "--shard-size",
        "8KiB",
    ]);
    std::fs::remove_file(out.join("mds/shard.00001.mds")).unwrap();
    let want = format!(
        "error: input `{}` does not exist, but index.json lists it (shard entry 1)\n",
        out.s("mds/shard.00001.mds")
    );
    let stderr = refused(&["pack", &out.s("mds"), &out.s("o"), "--format", "parquet"]);
    assert_eq!(stderr, want);
    let stderr = refused(&["pack", &out.s("mds"), &out.s("o2"), "--input-format", "mds"]);
    assert_eq!(stderr, want);
    assert!(!out.join("o/manifest.json").exists() && !out.join("o2/manifest.json").exists());
}

#[test]
fn a_brace_pattern_that_matches_nothing_is_refused_naming_it() {
    let t = Tree::new();
    t.file("shards/other.txt", b"not a shard");
    let out = Tree::new();
    let pattern = t.s("shards/shard-{000000..000009}.tar");
    let stderr = refused(&["pack", &pattern, &out.s("o"), "--format", "mds"]);
    assert_eq!(
        stderr,
        format!(
            "error: brace pattern `{pattern}` matches no file: none of its 10 names exists (the first is `{}`)\n",
            t.s("shards/shard-000000.tar")
        )
    );
    assert!(!out.join("o").join("manifest.json").exists());
}

#[test]
fn compressed_shards_convert_back_to_the_same_files() {
    let raw = Tree::new();
    let files = round_trip_files();
    for (rel, data) in &files {
        raw.file(rel, data);
    }
    let out = Tree::new();
    for compression in ["gz", "zstd"] {
        let packed = out.s(compression);
        pack_ok(&[
            "pack",
            raw.path().to_str().unwrap(),
            &packed,
            "--compression",
            compression,
            "--shard-size",
            "8KiB",
        ]);
        // Without --scratch-dir: decompressed copies, if any, go where pack puts them.
        let plain = out.s(&format!("{compression}-plain"));
        pack_ok(&["pack", &packed, &plain, "--shard-size", "8KiB"]);
        let got: BTreeMap<String, Vec<u8>> = tar_members(Path::new(&plain)).into_iter().collect();
        assert!(
            got == files,
            "{compression}: the members differ from the files (names {:?})",
            got.keys().collect::<Vec<_>>()
        );
    }
}
