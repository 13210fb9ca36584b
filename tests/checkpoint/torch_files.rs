//! Torch files as torch writes them (`torch.save` zip and legacy, safetensors, DCP; made
//! in the test by tests/interop/torch_files.py), judged by torch's own readers
//! (`torch.load` with `weights_only=True` and `False`, `dcp.load`) in the same script,
//! and by `shardsmith verify`, `ls` and `diff` here, side by side: a file torch reads
//! without loss is not an error, a file it cannot read is one, every name it returns is
//! listed and compared, and no value is left out of `diff` without saying so.
//!
//! Needs `SHARDSMITH_TORCH_PYTHON` (set by tests/run_all.sh); skips visibly without it
//! and fails under CI.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::interop::run_torch;
use crate::util::*;

/// The files the script made and torch's verdicts on them, made once per run; `None`
/// without the torch env.
fn made() -> Option<&'static (PathBuf, Value)> {
    static MADE: OnceLock<Option<(PathBuf, Value)>> = OnceLock::new();
    MADE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("torch_files");
        let _ = std::fs::remove_dir_all(&dir);
        let out = run_torch(&["torch_files.py", dir.to_str().unwrap()])?;
        let verdicts = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        Some((dir, verdicts))
    })
    .as_ref()
}

/// What `torch.load(file, weights_only=...)` said: `ok [keys]` or `error: ...`.
fn torch_says<'a>(verdicts: &'a Value, file: &str, weights_only: bool) -> &'a str {
    let key = if weights_only { "weights_only" } else { "full" };
    verdicts[file][key]
        .as_str()
        .unwrap_or_else(|| panic!("no verdict on {file}: {verdicts:#}"))
}

/// The keys torch returned, from an `ok [...]` verdict.
fn torch_keys(verdicts: &Value, file: &str) -> Vec<String> {
    let said = torch_says(verdicts, file, true);
    let keys = said
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("torch.load refused {file}: {said}"));
    serde_json::from_str(keys).unwrap()
}

/// `verify FILE --json`: the exit code and `(kind, severity, message)` of each finding.
fn verify(dir: &Path, file: &str) -> (i32, Vec<(String, String, String)>) {
    let (code, report) = run_json(&["verify", dir.join(file).to_str().unwrap()]);
    let found = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("kind"), s("severity"), s("message"))
        })
        .collect();
    (code, found)
}

/// The tensor names `ls FILE --json` lists, sorted.
fn listed(dir: &Path, file: &str) -> Vec<String> {
    let (code, report) = run_json(&["ls", dir.join(file).to_str().unwrap()]);
    assert_eq!(code, 0, "{file}: {report:#}");
    let mut names: Vec<String> = report["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

fn diff(dir: &Path, a: &str, b: &str) -> (i32, Value) {
    run_json(&[
        "diff",
        dir.join(a).to_str().unwrap(),
        dir.join(b).to_str().unwrap(),
    ])
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn every_name_torch_returns_is_listed_and_compared() {
    let Some((dir, verdicts)) = made() else {
        return;
    };
    // One tensor object under two keys, tied weights (two tensors of one storage) and
    // views of one storage, in the zip and the legacy format.
    for file in [
        "alias.pt",
        "alias_legacy.pt",
        "tied.pt",
        "tied_legacy.pt",
        "views.pt",
        "views_legacy.pt",
    ] {
        assert_eq!(
            torch_says(verdicts, file, false),
            torch_says(verdicts, file, true)
        );
        assert_eq!(listed(dir, file), torch_keys(verdicts, file), "{file}");
        let (code, found) = verify(dir, file);
        assert_eq!(code, 0, "{file}: {found:?}");
        let kinds: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
        let want: &[&str] = if file.contains("legacy") {
            &["legacy_format"]
        } else {
            &[]
        };
        assert_eq!(kinds, want, "{file}");
    }
    // `a` and `b` are the same object when torch loads them.
    assert_eq!(verdicts["alias.pt"]["aliased"], true);
    assert_eq!(verdicts["alias_legacy.pt"]["aliased"], true);
    // Against a safetensors file holding only `b`, `a` is missing.
    let (code, report) = diff(dir, "alias.pt", "only_b.safetensors");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["only_a"][0]["name"], "a", "{report:#}");
    assert_eq!(report["same"], 1);
    assert_eq!(report["identical"], false);
    // The zip and the legacy file hold the same two tensors.
    let (code, report) = diff(dir, "alias.pt", "alias_legacy.pt");
    assert_eq!((code, &report["same"]), (0, &Value::from(2)), "{report:#}");
    let (code, report) = diff(dir, "tied.pt", "tied_legacy.pt");
    assert_eq!((code, &report["same"]), (0, &Value::from(2)), "{report:#}");
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn a_legacy_file_torch_cannot_load_fails_verify_as_ls_and_diff_refuse_it() {
    let Some((dir, verdicts)) = made() else {
        return;
    };
    // (file, torch.load's words, our finding kind, our words: {len} is the file's
    // length, {first} where the first storage starts, {count} its element count)
    let layout = &verdicts["legacy_layout"];
    let (first, count) = (
        layout["first"].as_u64().unwrap(),
        layout["count"].as_u64().unwrap(),
    );
    let cases = [
        (
            "legacy_cut_pickle.pt",
            "EOFError",
            "bad_pickle",
            "pickle 4 of 5 (the object) cannot be read",
        ),
        (
            "legacy_cut_count.pt",
            "unexpected EOF",
            "truncated",
            "the file is cut short; torch.load fails with \"unexpected EOF\"",
        ),
        (
            "legacy_cut_storage.pt",
            "unexpected EOF",
            "truncated",
            "past the end of the {len}-byte file",
        ),
        (
            "legacy_cut_between.pt",
            "unexpected EOF",
            "truncated",
            "the file ends at byte {len}, where the element count of storage",
        ),
        (
            "legacy_cut_last_byte.pt",
            "unexpected EOF",
            "truncated",
            "past the end of the {len}-byte file",
        ),
        (
            "legacy_wrong_count.pt",
            "storage has wrong byte size",
            "bad_tensor",
            "holds {count_plus_1} elements (count at byte {first}) but the pickle declares {count}",
        ),
        (
            "f8_legacy.pt",
            "has no attribute 'dtype'",
            "unsupported_dtype",
            "torch.load cannot read them from a legacy file",
        ),
    ];
    for (file, torch_words, kind, words) in cases {
        let len = std::fs::metadata(dir.join(file)).unwrap().len();
        let words = words
            .replace("{len}", &len.to_string())
            .replace("{first}", &first.to_string())
            .replace("{count_plus_1}", &(count + 1).to_string())
            .replace("{count}", &count.to_string());
        let words = words.as_str();
        for weights_only in [true, false] {
            let said = torch_says(verdicts, file, weights_only);
            assert!(
                said.starts_with("error") && said.contains(torch_words),
                "{file}: {said}"
            );
        }
        let (code, found) = verify(dir, file);
        assert_eq!(code, 1, "{file}: {found:?}");
        let errors: Vec<_> = found.iter().filter(|f| f.1 == "error").collect();
        assert_eq!(errors.len(), 1, "{file}: {found:?}");
        assert_eq!(errors[0].0, kind, "{file}: {found:?}");
        assert!(errors[0].2.contains(words), "{file}: {found:?}");
        if file == "f8_legacy.pt" {
            // Its bytes are all there: ls and diff read them.
            continue;
        }
        // ls and diff refuse it in the same words (one reading of the layout).
        let out = run(&["ls", dir.join(file).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(
            text(&out.stderr).contains(words),
            "{file}: {}",
            text(&out.stderr)
        );
        let (code, report) = diff(dir, file, "legacy.pt");
        assert_eq!(code, 2, "{file}: {report:#}");
    }
    // The same file whole loads, and is clean; bytes after its last storage are
    // ignored by torch: a warning.
    assert_eq!(torch_keys(verdicts, "legacy.pt"), ["a", "u"]);
    assert_eq!(torch_keys(verdicts, "legacy_trailing.pt"), ["a", "u"]);
    let (code, found) = verify(dir, "legacy.pt");
    assert_eq!(code, 0);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "legacy_format");
    let (code, found) = verify(dir, "legacy_trailing.pt");
    assert_eq!(code, 0, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        ("trailing_data", "warning")
    );
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn what_weights_only_loads_is_not_unsafe_and_what_it_refuses_is_a_warning() {
    let Some((dir, verdicts)) = made() else {
        return;
    };
    // A set and a Counter: torch.load(weights_only=True) accepts both.
    for file in ["set.pt", "counter.pt"] {
        assert!(torch_says(verdicts, file, true).starts_with("ok"));
        assert_eq!(verify(dir, file), (0, Vec::new()), "{file}");
    }
    // A frozenset: refused by weights_only ("Unsupported global"), loaded without it;
    // pickle protocol 4: refused ("Unsupported operand 149", its FRAME opcode).
    for (file, torch_words, words) in [
        (
            "frozenset.pt",
            "Unsupported global: GLOBAL frozenset",
            "data.pkl imports `builtins.frozenset`, which torch.load(weights_only=True)",
        ),
        (
            "proto4.pt",
            "Unsupported operand 149",
            "opcode FRAME (0x95) at pickle offset 2, which torch.load(weights_only=True)",
        ),
    ] {
        let said = torch_says(verdicts, file, true);
        assert!(said.contains(torch_words), "{file}: {said}");
        assert!(torch_says(verdicts, file, false).starts_with("ok"));
        let (code, found) = verify(dir, file);
        assert_eq!(code, 0, "{file}: {found:?}");
        assert_eq!(found.len(), 1, "{file}: {found:?}");
        let (kind, severity, message) = &found[0];
        assert_eq!(
            (kind.as_str(), severity.as_str()),
            ("unsafe_pickle", "warning")
        );
        assert!(message.contains(words), "{file}: {message}");
    }
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn tensors_with_no_element_are_saved_not_placeholders() {
    let Some((dir, verdicts)) = made() else {
        return;
    };
    assert_eq!(torch_keys(verdicts, "empty.pt"), ["e", "e2", "w"]);
    assert_eq!(torch_keys(verdicts, "empty_legacy.pt"), ["e", "e2", "w"]);
    assert_eq!(verdicts["dcp_empty"]["dcp_load"], "ok");
    assert_eq!(verify(dir, "empty.pt"), (0, Vec::new()));
    let (code, found) = verify(dir, "empty_legacy.pt");
    assert_eq!(code, 0);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "legacy_format");
    // A DCP save whose tensor has no element: its data file holds an empty storage.
    assert_eq!(verify(dir, "dcp_empty"), (0, Vec::new()));
    assert_eq!(listed(dir, "empty.pt"), ["e", "e2", "w"]);
    let (code, report) = diff(dir, "empty.pt", "empty_legacy.pt");
    assert_eq!((code, &report["same"]), (0, &Value::from(3)), "{report:#}");
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn diff_compares_the_values_beside_the_tensors_and_names_those_it_did_not() {
    let Some((dir, verdicts)) = made() else {
        return;
    };
    assert_eq!(
        torch_keys(verdicts, "scalars.pt"),
        ["lr", "name", "step", "w"]
    );
    // The same weights, another step: the weights decide, the step is shown.
    let (code, report) = diff(dir, "scalars.pt", "scalars2.pt");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["identical"], true);
    let entries = &report["entries"];
    assert_eq!(entries["same"], 2, "{report:#}");
    assert_eq!(
        entries["changed"],
        serde_json::json!([{"a": "5", "b": "6", "name": "step"}])
    );
    assert_eq!(entries["not_compared"], serde_json::json!([]));
    // Against a safetensors file (tensors only): each value is named as not compared.
    let (code, report) = diff(dir, "scalars.pt", "only_b.safetensors");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["entries"]["not_compared"],
        serde_json::json!([
            {"a": "0.001", "b": null, "name": "lr"},
            {"a": "'adamw'", "b": null, "name": "name"},
            {"a": "5", "b": null, "name": "step"},
        ])
    );
    // A DCP checkpoint's bytes item (`step`) is named, its value not read here.
    assert_eq!(verdicts["dcp_step"]["dcp_load"], "ok step=7");
    let (code, report) = diff(dir, "dcp_step", "scalars.pt");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        report["entries"]["not_compared"],
        serde_json::json!([
            {"a": null, "b": "0.001", "name": "lr"},
            {"a": null, "b": "'adamw'", "name": "name"},
            {"a": "<bytes item, not read>", "b": "5", "name": "step"},
        ])
    );
    let out = run(&[
        "diff",
        dir.join("scalars.pt").to_str().unwrap(),
        dir.join("only_b.safetensors").to_str().unwrap(),
    ]);
    let shown = text(&out.stdout);
    assert!(shown.contains("unchecked step = 5 (only in A)"), "{shown}");
    assert!(
        shown.contains("values beside the tensors: 3 not compared"),
        "{shown}"
    );
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn tensors_of_other_layouts_are_named_as_not_checked() {
    let Some((dir, verdicts)) = made() else {
        return;
    };
    for (file, name, func) in [
        ("sparse.pt", "s", "torch._utils._rebuild_sparse_tensor"),
        ("quantized.pt", "q", "torch._utils._rebuild_qtensor"),
    ] {
        assert_eq!(torch_keys(verdicts, file), [name, "w"]);
        let (code, found) = verify(dir, file);
        assert_eq!(code, 0, "{file}: {found:?}");
        assert_eq!(found.len(), 1, "{file}: {found:?}");
        let (kind, severity, message) = &found[0];
        assert_eq!(
            (kind.as_str(), severity.as_str()),
            ("unsupported_dtype", "warning")
        );
        assert!(
            message.contains(&format!("tensor `{name}` (`{func}`")),
            "{message}"
        );
        // ls and diff refuse it rather than leave it out.
        let out = run(&["ls", dir.join(file).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(text(&out.stderr).contains(func), "{}", text(&out.stderr));
    }
}
