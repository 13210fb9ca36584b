//! `ls`, `stats` and `cat` of what the real tools wrote (webdataset's ShardWriter, GNU
//! tar, streaming's MDSWriter).

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
