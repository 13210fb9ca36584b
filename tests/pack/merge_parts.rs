//! `merge OUTPUT PART...` of Hugging Face and LitData parts packed separately: the root
//! `state.json` + `dataset_info.json` (hf) or `index.json` (litdata) name every part's
//! shards under its directory, so the root is one dataset for shardsmith and for
//! `datasets.load_from_disk` / `litdata.StreamingDataset`; parts of different schemas
//! are refused.

use crate::interop;
use crate::util::*;

/// Two parts with different keys (`pN/...`), the same fields.
fn parts(format: &str) -> Tree {
    let out = Tree::new();
    for (part, n) in [("a", 7u64), ("b", 5)] {
        let input = Tree::new();
        for i in 0..n {
            input.file(&format!("{part}{i:02}.bin"), noise(i, 100 + i as usize));
            input.file(&format!("{part}{i:02}.txt"), format!("text {part} {i}"));
        }
        let o = run(&[
            "pack",
            input.path().to_str().unwrap(),
            &out.s(part),
            "--format",
            format,
            "--shard-size",
            "4KiB",
        ]);
        assert!(o.status.success(), "{format}: {}", text(&o.stderr));
    }
    out
}

fn keys_through_pack(format: &str, dir: &str) -> Vec<String> {
    let t = Tree::new();
    let (code, report) = run_json(&[
        "pack",
        dir,
        &t.s("wds"),
        "--input-format",
        format,
        "--shard-size",
        "1MiB",
    ]);
    assert_eq!(code, 0, "{format}: {report}");
    let m = manifest(&t.join("wds"));
    assert_eq!(m["totals"]["samples"], 12, "{format}");
    let mut keys = Vec::new();
    for entry in m["files"].as_array().unwrap() {
        let path = t.join("wds").join(entry["path"].as_str().unwrap());
        let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
        for member in archive.entries().unwrap() {
            let name = member
                .unwrap()
                .path()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if name.ends_with(".txt") {
                keys.push(name.trim_end_matches(".txt").to_string());
            }
        }
    }
    keys
}

#[test]
fn hf_and_litdata_parts_merge_into_one_dataset() {
    for (format, root) in [
        ("hf", &["state.json", "dataset_info.json"][..]),
        ("litdata", &["index.json"][..]),
    ] {
        let out = parts(format);
        let (code, report) = run_json(&["merge", out.path().to_str().unwrap(), "a", "b"]);
        assert_eq!(code, 0, "{format}: {report}");
        for file in root {
            assert!(out.join(file).exists(), "{format}: root {file}");
        }
        let m = manifest(out.path());
        let listed: Vec<&str> = m["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(
            root.iter().all(|f| listed.contains(f)),
            "{format}: {listed:?}"
        );
        let v = run(&["verify", out.path().to_str().unwrap()]);
        assert_eq!(v.status.code(), Some(0), "{format}: {}", text(&v.stdout));
        let (_, stats) = run_json(&["stats", out.path().to_str().unwrap()]);
        assert_eq!(stats["samples"], 12, "{format}: {stats}");
        // Read back as one dataset: every sample of both parts, in part order (keys of
        // a Hugging Face dataset come from its __key__ column, of LitData from __key__).
        let keys = keys_through_pack(format, out.path().to_str().unwrap());
        let want: Vec<String> = (0..7)
            .map(|i| format!("a{i:02}"))
            .chain((0..5).map(|i| format!("b{i:02}")))
            .collect();
        assert_eq!(keys, want, "{format}");
    }
}

#[test]
fn parts_of_different_schemas_are_refused() {
    for format in ["hf", "litdata"] {
        let out = parts(format);
        // Part c has another field.
        let input = Tree::new();
        input.file("c00.bin", b"x").file("c00.json", "{}");
        let o = run(&[
            "pack",
            input.path().to_str().unwrap(),
            &out.s("c"),
            "--format",
            format,
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let o = run(&["merge", out.path().to_str().unwrap(), "a", "c"]);
        assert_eq!(o.status.code(), Some(2), "{format}");
        let err = text(&o.stderr);
        assert!(
            err.contains("part `c`") && err.contains("part `a`"),
            "{format}: {err}"
        );
        assert!(
            !out.join("manifest.json").exists(),
            "{format}: nothing merged"
        );
    }
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn the_libraries_read_merged_parts_as_one_dataset() {
    let Some(python) = interop::torch_python() else {
        return;
    };
    for (format, read) in [
        (
            "hf",
            "import datasets; d = datasets.load_from_disk(r); print(list(d['__key__']))",
        ),
        (
            "litdata",
            "import litdata; print([x['__key__'] for x in litdata.StreamingDataset(r)])",
        ),
    ] {
        let out = parts(format);
        let o = run(&["merge", out.path().to_str().unwrap(), "a", "b"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let o = std::process::Command::new(&python)
            .args(["-c", &format!("import sys; r = sys.argv[1]; {read}")])
            .arg(out.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{format}: {}", text(&o.stderr));
        let want =
            "['a00', 'a01', 'a02', 'a03', 'a04', 'a05', 'a06', 'b00', 'b01', 'b02', 'b03', 'b04']";
        assert_eq!(text(&o.stdout).trim(), want, "{format}");
    }
}
