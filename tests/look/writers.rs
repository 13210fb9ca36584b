//! `ls`, `stats` and `cat` of what other writers made: `pack` in every format, and the
//! real tools (webdataset's ShardWriter, GNU tar, streaming's MDSWriter).

use std::collections::BTreeMap;

use super::util::{ok, originals};
use crate::util::*;

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

/// A sample as a test expects `ls -l` to list it: its key, and each field's bytes where
/// `cat` must give them exactly (`None`: the field is only listed).
type Expected = (String, BTreeMap<String, Option<Vec<u8>>>);

/// `ls -l`, `stats` and `cat` of the dataset `dir` (`what` in messages) give `want`: the
/// keys in order, each sample's fields and their sizes, no duplicate key, and every ninth
/// sample's exact fields by `cat`.
fn lists_as_expected(what: &str, dir: &str, want: &[Expected]) {
    let (code, report) = run_json(&["ls", dir, "-l"]);
    assert_eq!(code, 0, "{what}: {report}");
    let samples = report["samples"].as_array().unwrap();
    let keys: Vec<&str> = samples.iter().map(|s| s["key"].as_str().unwrap()).collect();
    let want_keys: Vec<&str> = want.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, want_keys, "{what}");
    let (_, stats) = run_json(&["stats", dir]);
    assert_eq!(stats["samples"], want.len(), "{what}");
    assert_eq!(stats["duplicate_keys"]["count"], 0, "{what}");
    for (i, (got, (key, fields))) in samples.iter().zip(want).enumerate() {
        let names: Vec<&String> = fields.keys().collect();
        let listed: Vec<&String> = got["fields"].as_object().unwrap().keys().collect();
        assert_eq!(listed, names, "{what} {key}");
        for (field, bytes) in fields {
            let Some(bytes) = bytes else { continue };
            assert_eq!(got["fields"][field], bytes.len(), "{what} {key} {field}");
            if i % 9 == 0 {
                let o = run(&["cat", dir, key, field]);
                assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
                assert_eq!(&o.stdout, bytes, "{what} {key} {field}");
            }
        }
    }
}

/// What `pack` wrote in every format lists as its input.
#[test]
fn ls_stats_and_cat_read_what_pack_wrote() {
    let input = corpus(40, 3000);
    let mut samples: BTreeMap<String, BTreeMap<String, Option<Vec<u8>>>> = BTreeMap::new();
    for ((key, field), bytes) in originals(&input) {
        samples.entry(key).or_default().insert(field, Some(bytes));
    }
    let want: Vec<Expected> = samples.into_iter().collect();
    let t = Tree::new();
    for (name, args) in [
        ("wds", &[][..]),
        ("wgz", &["--compression", "gz"][..]),
        ("mds", &["--format", "mds"][..]),
        ("pq", &["--format", "parquet"][..]),
    ] {
        let dir = t.s(name);
        let mut all = vec![
            "pack",
            input.path().to_str().unwrap(),
            &dir,
            "--max-samples",
            "7",
            "-q",
        ];
        all.extend_from_slice(args);
        ok(&all);
        lists_as_expected(name, &dir, &want);
    }
}

/// What the real tools wrote (tests/interop/make_convert_inputs.py: webdataset's
/// ShardWriter, GNU tar, streaming's MDSWriter) lists as their expected.json says.
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
        let want: Vec<Expected> = want["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let fields = w["fields"].as_object().unwrap().iter();
                let fields = fields.map(|(field, value)| {
                    let exact = EXACT_KINDS.contains(&value["kind"].as_str().unwrap());
                    let bytes = exact.then(|| {
                        base64::engine::general_purpose::STANDARD
                            .decode(value["b64"].as_str().unwrap())
                            .unwrap()
                    });
                    (field.clone(), bytes)
                });
                (w["key"].as_str().unwrap().to_string(), fields.collect())
            })
            .collect();
        lists_as_expected(input, &t.s(&format!("in/{input}")), &want);
    }
}
