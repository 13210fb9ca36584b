//! The reference safetensors reader (safetensors 0.8.0, pinned in the interop env)
//! refuses exactly the files `shardsmith verify` reports an error for, and loads the
//! ones it passes (NaN loads fine: --scan-values), except a zeroed block that cannot be
//! data, which it loads silently (it has no checksum) and we report.
//!
//! Needs `SHARDSMITH_PYTHON` (set by tests/run_all.sh); skips visibly without it and
//! fails under CI.

use std::path::Path;

use crate::checkpoint::basic::{truncate, verify, zero};
use crate::interop::{interop_dir, python, run_python};
use crate::util::*;

fn header_file(header: &str, data: usize) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend((0..data).map(|i| (i % 200 + 1) as u8));
    out
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn the_reference_reader_agrees_with_our_verdicts() {
    if python().is_none() {
        return;
    }
    let t = Tree::new();
    let good = checkpoint_fixture("plain/model.safetensors");
    let len = good.len();
    let variants: Vec<(&str, Vec<u8>)> = vec![
        ("clean", good.clone()),
        ("nan", checkpoint_fixture("values/nan.safetensors")),
        (
            "shard1",
            checkpoint_fixture("sharded/model-00001-of-00003.safetensors"),
        ),
        ("short", good[..len - 3].to_vec()),
        ("long", [good.clone(), vec![0; 64]].concat()),
        (
            "lfs",
            b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n".to_vec(),
        ),
        ("empty", Vec::new()),
        (
            "gap",
            header_file(
                r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}}"#,
                10,
            ),
        ),
        (
            "overlap",
            header_file(
                r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}"#,
                6,
            ),
        ),
        (
            "shape",
            header_file(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                8,
            ),
        ),
        (
            "dtype",
            header_file(
                r#"{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}"#,
                16,
            ),
        ),
        (
            "meta",
            header_file(
                r#"{"__metadata__":{"n":1},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
                1,
            ),
        ),
        (
            "scalar",
            header_file(
                r#"{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}"#,
                4,
            ),
        ),
    ];
    for (name, bytes) in &variants {
        t.file(&format!("{name}.safetensors"), bytes);
    }
    let zeroed = t.join("zeroed.safetensors");
    std::fs::write(&zeroed, &good).unwrap();
    zero(&zeroed, 8192, 4096);
    let header0 = t.join("header0.safetensors");
    std::fs::write(&header0, &good).unwrap();
    zero(&header0, 0, 8);
    let cut = t.join("cut.safetensors");
    std::fs::write(&cut, &good).unwrap();
    truncate(&cut, 100);

    let mut names: Vec<String> = variants.iter().map(|(n, _)| n.to_string()).collect();
    names.extend(["zeroed", "header0", "cut"].map(String::from));
    let paths: Vec<String> = names
        .iter()
        .map(|n| t.s(&format!("{n}.safetensors")))
        .collect();
    let script = interop_dir().join("check_safetensors.py");
    let mut args = vec![script.to_str().unwrap()];
    args.extend(paths.iter().map(String::as_str));
    let verdicts = run_python(&args, &[]).expect("python was found above");
    let mut checked = 0;
    for (name, path) in names.iter().zip(&paths) {
        let line = verdicts
            .lines()
            .find(|l| l.contains(path.as_str()))
            .unwrap();
        let python_loads = line.starts_with("ok ");
        let (code, report) = verify(Path::new(path), &[]);
        // An unknown dtype is "unsupported by this reader", a warning, not corruption.
        let unsupported = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "unsupported_dtype");
        let we_accept = code == 0 && !unsupported;
        if name == "zeroed" {
            // No checksum: the reader loads a zeroed 4 KiB block silently; it is mid-row in
            // a tensor with no other zero element, which we report as an error.
            assert!(
                python_loads && code == 1,
                "{name}: python says `{line}`, we say {report:#}"
            );
            checked += 1;
            continue;
        }
        assert_eq!(
            we_accept, python_loads,
            "{name}: python says `{line}`, we say {report:#}"
        );
        checked += 1;
    }
    assert_eq!(checked, 16);
    for must_fail in [
        "short", "long", "lfs", "empty", "gap", "overlap", "shape", "dtype", "meta", "header0",
        "cut",
    ] {
        assert!(
            verdicts.contains(&format!(
                "error {}",
                t.s(&format!("{must_fail}.safetensors"))
            )),
            "{must_fail}: {verdicts}"
        );
    }
}
