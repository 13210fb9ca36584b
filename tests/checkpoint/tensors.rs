//! Checkpoints by content: `shardsmith diff` and `manifest --tensors` on fixtures made
//! by real torch and safetensors (tests/fixtures/checkpoints/generate.py, `diff/`):
//! a `.pt` and its safetensors conversion, a dtype conversion, one changed element, a
//! transposed view, DCP by two ranks against the same state in one file, legacy torch.

use serde_json::Value;

use crate::checkpoint::basic::{copy, verify};
use crate::util::*;

fn fixture(rel: &str) -> String {
    fixtures().join(rel).to_string_lossy().into_owned()
}

fn diff(a: &str, b: &str, extra: &[&str]) -> (i32, Value) {
    let (a, b) = (fixture(a), fixture(b));
    let mut args = vec!["diff", a.as_str(), b.as_str()];
    args.extend_from_slice(extra);
    run_json(&args)
}

/// The little-endian f32 at element `index` of tensor `name` of a safetensors file.
fn f32_at(rel: &str, name: &str, index: usize) -> f32 {
    let bytes = checkpoint_fixture(rel);
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let start = header[name]["data_offsets"][0].as_u64().unwrap() as usize;
    let at = 8 + n + start + 4 * index;
    f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn the_same_weights_in_other_containers_are_the_same() {
    for (a, b, tensors) in [
        ("diff/model.pt", "diff/model.safetensors", 6),
        ("diff/model.safetensors", "diff/model.pt", 6),
        ("plain/legacy.pt", "plain/model.pt", 9),
        ("plain/proto4.pt", "plain/nocrc.pt", 9),
        ("dcp2", "diff/dcp_state.safetensors", 2),
        ("dcp1", "dcp2", 2),
        ("dcp2/.metadata", "dcp_st", 2),
        ("megatron/iter_0000005", "megatron/iter_0000005", 6),
        // uint16 in a legacy file is an untyped storage counted in bytes.
        ("unusual/u16_legacy.pt", "unusual/u16.pt", 2),
    ] {
        let (code, report) = diff(a, b, &["--values"]);
        assert_eq!(code, 0, "{a} vs {b}: {report:#}");
        assert_eq!(report["identical"], true);
        assert_eq!(report["same"], tensors, "{a} vs {b}");
        assert_eq!(report["changed"], serde_json::json!([]));
    }
}

#[test]
fn a_dtype_conversion_is_named_and_compared_by_value() {
    let (code, report) = diff(
        "diff/model.safetensors",
        "diff/fp16.safetensors",
        &["--values"],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["same"], 5);
    let changed = &report["changed"][0];
    assert_eq!(changed["change"], "dtype");
    assert_eq!(changed["a"]["dtype"], "BF16");
    assert_eq!(changed["b"]["dtype"], "F16");
    assert_eq!(changed["a"]["shape"], serde_json::json!([256]));
    // Every bf16 value of randn fits f16 exactly: the conversion lost nothing.
    assert_eq!(changed["values"]["elements"], 256);
    assert_eq!(changed["values"]["differing"], 0);
    assert_eq!(report["changed"].as_array().unwrap().len(), 1);
}

#[test]
fn one_changed_element_is_counted_with_its_index_and_size() {
    let (code, report) = diff(
        "diff/model.safetensors",
        "diff/one_changed.safetensors",
        &["--values"],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["same"], 5);
    let changed = &report["changed"][0];
    assert_eq!(changed["change"], "data");
    assert_eq!(changed["a"]["name"], "w");
    let values = &changed["values"];
    assert_eq!(values["elements"], 128 * 64);
    assert_eq!(values["differing"], 1);
    assert_eq!(values["first_index"], 3 * 64 + 5);
    let before = f32_at("diff/model.safetensors", "w", 3 * 64 + 5);
    let after = f32_at("diff/one_changed.safetensors", "w", 3 * 64 + 5);
    assert_eq!(after, before + 1.0);
    let abs = f64::from(after) - f64::from(before);
    assert_eq!(values["max_abs"].as_f64().unwrap(), abs);
    let rel = abs / f64::from(before.abs().max(after.abs()));
    assert_eq!(values["max_rel"].as_f64().unwrap(), rel);
    // Without --values the comparison stops at the first differing byte.
    let (code, report) = diff(
        "diff/model.safetensors",
        "diff/one_changed.safetensors",
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(report["changed"][0]["values"], Value::Null);
    // The human summary names it.
    let (a, b) = (
        fixture("diff/model.safetensors"),
        fixture("diff/one_changed.safetensors"),
    );
    let out = run(&["diff", &a, &b, "--values"]);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out.stdout);
    assert!(
        shown.starts_with(&format!(
            "  data      w (F32 [128, 64]): 1 of 8192 elements differ (first at 197), max abs 1, max rel {}\n",
            format!("{rel:.6}").trim_end_matches('0')
        )),
        "{shown}"
    );
    assert!(shown.ends_with("1 changed, 5 same\n"), "{shown}");
}

#[test]
fn names_are_matched_after_the_map_rules() {
    let (code, report) = diff("diff/prefixed.pt", "diff/model.pt", &[]);
    assert_eq!(code, 1);
    assert_eq!(report["only_a"].as_array().unwrap().len(), 6);
    assert_eq!(report["only_b"].as_array().unwrap().len(), 6);
    assert_eq!(report["only_a"][0]["name"], "model.b");
    let t = Tree::new();
    t.file("map.txt", "# the wrapper's prefix\nmodel.* -> *\n");
    let (code, report) = diff(
        "diff/prefixed.pt",
        "diff/model.pt",
        &["--map", &t.s("map.txt")],
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["same"], 6);
    t.file("bad.txt", "model.* => *\n");
    let (code, report) = diff(
        "diff/prefixed.pt",
        "diff/model.pt",
        &["--map", &t.s("bad.txt")],
    );
    assert_eq!(code, 2);
    assert_eq!(report["error"]["kind"], "setting");
    assert_eq!(
        report["error"]["message"],
        format!(
            "{} line 1: expected `PATTERN -> REPLACEMENT`",
            t.s("bad.txt")
        )
    );
}

#[test]
fn tensors_that_are_not_plain_views_are_refused_not_left_out() {
    for (file, rebuild) in [
        ("unusual/quantized.pt", "torch._utils._rebuild_qtensor"),
        ("unusual/sparse.pt", "torch._utils._rebuild_sparse_tensor"),
    ] {
        let (code, report) = diff(file, file, &[]);
        assert_eq!(code, 2, "{file}: {report:#}");
        assert_eq!(report["error"]["kind"], "unsupported");
        let message = report["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("rebuilt by `{rebuild}`")),
            "{message}"
        );
    }
    // manifest --tensors records the rest and says which file it could not.
    let t = copy("unusual");
    let out = run(&["manifest", t.path().to_str().unwrap(), "--tensors"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tensors of `quantized.pt` not recorded"),
        "{stderr}"
    );
    let recorded = records(t.path());
    assert!(
        recorded
            .iter()
            .all(|r| r.0 != "quantized.pt" && r.0 != "sparse.pt")
    );
    assert_eq!(
        recorded.iter().filter(|r| r.0 == "u16_legacy.pt").count(),
        2
    );
}

#[test]
fn a_dcp_data_file_outside_its_directory_is_refused() {
    let t = copy("dcp2");
    let meta = t.join(".metadata");
    let bytes = std::fs::read(&meta).unwrap();
    let from = b"\x8c\x0c__0_0.distcp";
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("the file name is in .metadata");
    let mut edited = bytes.clone();
    edited[at..at + from.len()].copy_from_slice(b"\x8c\x0c../_0.distcp");
    std::fs::write(&meta, edited).unwrap();
    let (code, report) = run_json(&["diff", t.path().to_str().unwrap(), &fixture("dcp2")]);
    assert_eq!(code, 2, "{report:#}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("is stored in `../_0.distcp`, not a file beside .metadata"),
        "{message}"
    );
}

#[test]
fn what_cannot_be_read_exits_2_naming_it() {
    let t = Tree::new();
    t.file("notes.txt", "not a checkpoint\n");
    let (code, report) = run_json(&["diff", &t.s("notes.txt"), &fixture("diff/model.pt")]);
    assert_eq!(code, 2);
    assert_eq!(report["error"]["kind"], "unsupported");
    // A DCP checkpoint whose .metadata lost a chunk cannot be read whole.
    let (code, report) = diff("dcp2_gap", "dcp2", &[]);
    assert_eq!(code, 2);
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with("tensor `model.w`: element [64, 0] is in no chunk (`shardsmith verify` names the chunks missing)"),
        "{message}"
    );
}

/// The digests `manifest --tensors` recorded, by file and tensor name.
fn records(dir: &std::path::Path) -> Vec<(String, String, String)> {
    let m = manifest(dir);
    let mut out = Vec::new();
    for f in m["files"].as_array().unwrap() {
        for t in f["tensors"].as_array().into_iter().flatten() {
            out.push((
                f["path"].as_str().unwrap().to_string(),
                t["name"].as_str().unwrap().to_string(),
                t["sha256"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

#[test]
fn recorded_digests_are_numpy_s_canonical_bytes_whatever_the_container() {
    let t = copy("diff");
    let out = run(&["manifest", t.path().to_str().unwrap(), "--tensors"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("  tensors   32 in 6 checkpoint file(s)"),
        "{}",
        text(&out.stdout)
    );
    // digests.json: hashlib.sha256(np.ascontiguousarray(t.numpy()).tobytes()), made by
    // generate.py; `wt` is saved in model.pt as a transposed view of `w`'s storage.
    let numpy: Value = serde_json::from_slice(&checkpoint_fixture("diff/digests.json")).unwrap();
    let recorded = records(t.path());
    for file in ["model.pt", "model.safetensors"] {
        let of_file: Vec<_> = recorded.iter().filter(|r| r.0 == file).collect();
        assert_eq!(of_file.len(), 6, "{file}");
        for (_, name, sha) in of_file {
            assert_eq!(numpy[name], sha.as_str(), "{file}: {name}");
        }
    }
    // The manifest with tensors verifies clean, and stays byte-identical when re-made.
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 0, "{report:#}");
    let first = std::fs::read(t.join("manifest.json")).unwrap();
    let out = run(&[
        "manifest",
        t.path().to_str().unwrap(),
        "--tensors",
        "--force",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read(t.join("manifest.json")).unwrap(), first);
}

#[test]
fn verify_names_the_tensors_that_changed_in_a_changed_file() {
    let t = copy("diff");
    assert_eq!(
        run(&["manifest", t.path().to_str().unwrap(), "--tensors"])
            .status
            .code(),
        Some(0)
    );
    // One element of `w` differs: the file's hash and that one tensor.
    std::fs::copy(
        fixtures().join("diff/one_changed.safetensors"),
        t.join("model.safetensors"),
    )
    .unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1, "{report:#}");
    let tensor_findings: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "tensor_mismatch")
        .collect();
    assert_eq!(tensor_findings.len(), 1, "{report:#}");
    assert_eq!(tensor_findings[0]["path"], "model.safetensors");
    assert_eq!(
        tensor_findings[0]["message"],
        "tensor `w` (F32 [128, 64]): its data differs from the manifest"
    );
    assert_eq!(tensor_findings[0]["severity"], "error");
    // Another container, the same tensors: the file's hash, and a warning that says so.
    let t = copy("plain");
    assert_eq!(
        run(&["manifest", t.path().to_str().unwrap(), "--tensors"])
            .status
            .code(),
        Some(0)
    );
    std::fs::copy(fixtures().join("plain/proto4.pt"), t.join("model.pt")).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1, "{report:#}");
    let on_model: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == "model.pt")
        .map(|f| {
            (
                f["kind"].as_str().unwrap().into(),
                f["severity"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        on_model.contains(&("hash_mismatch".into(), "error".into())),
        "{on_model:?}"
    );
    assert!(
        on_model.contains(&("tensor_mismatch".into(), "warning".into())),
        "{on_model:?}"
    );
    let warning = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "tensor_mismatch")
        .unwrap();
    assert_eq!(
        warning["message"],
        "the file changed but all 9 recorded tensors have their recorded dtype, shape and data (only the container differs)"
    );
}

#[test]
fn a_dcp_checkpoint_records_its_tensors_on_metadata() {
    let t = copy("dcp2");
    assert_eq!(
        run(&["manifest", t.path().to_str().unwrap(), "--tensors"])
            .status
            .code(),
        Some(0)
    );
    let recorded = records(t.path());
    let names: Vec<(&str, &str)> = recorded
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![(".metadata", "model.b"), (".metadata", "model.w")]
    );
    // The same tensor in one safetensors file has the same digest.
    let one = copy("diff");
    assert_eq!(
        run(&["manifest", one.path().to_str().unwrap(), "--tensors"])
            .status
            .code(),
        Some(0)
    );
    let single = records(one.path());
    for (_, name, sha) in &recorded {
        assert!(
            single
                .iter()
                .any(|r| r.0 == "dcp_state.safetensors" && &r.1 == name && &r.2 == sha),
            "{name}"
        );
    }
    // A changed rank file names the tensor on .metadata.
    let rank = t.join("__1_0.distcp");
    let mut bytes = std::fs::read(&rank).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&rank, bytes).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1, "{report:#}");
    let kinds: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().into(),
                f["kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("__1_0.distcp".into(), "hash_mismatch".into())),
        "{kinds:?}"
    );
    let on_metadata: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == ".metadata")
        .collect();
    assert_eq!(on_metadata.len(), 1, "{report:#}");
    assert_eq!(on_metadata[0]["kind"], "tensor_mismatch");
    assert_eq!(on_metadata[0]["severity"], "error");
    assert_eq!(
        on_metadata[0]["message"],
        "tensor `model.w` (F32 [128, 64]): its data differs from the manifest"
    );
}
