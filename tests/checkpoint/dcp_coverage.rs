//! `shardsmith verify` checks that the chunks of every tensor of a DCP checkpoint tile
//! its global shape exactly once. The damaged fixtures are dcp2 with one change to
//! `.metadata` each (tests/fixtures/checkpoints/corrupt_dcp.py).

use serde_json::Value;

use crate::checkpoint::basic::{copy, verify};
use crate::util::*;

/// Every finding on `.metadata` as (kind, severity, message).
fn on_metadata(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == ".metadata")
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("kind"), s("severity"), s("message"))
        })
        .collect()
}

#[test]
fn clean_dcp_checkpoints_are_covered() {
    for dir in ["dcp1", "dcp2"] {
        let t = copy(dir);
        let (code, report) = verify(t.path(), &[]);
        assert_eq!(code, 0, "{dir}: {report:#}");
        assert_eq!(on_metadata(&report), vec![], "{dir}");
    }
    // Covered too; but dcp.load cannot read the safetensors format (tests/checkpoint/torch_dcp.rs).
    let t = copy("dcp_st");
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = on_metadata(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        ("bad_layout", "error")
    );
    assert!(
        found[0].2.contains("serialization_format=SAFETENSORS"),
        "{found:?}"
    );
}

#[test]
fn a_removed_moved_or_oversized_chunk_is_named_and_fails_verify() {
    let w = "tensor `model.w` (shape [128, 64])";
    let cases = [
        (
            "dcp2_gap",
            vec![format!(
                "{w}: elements [64..128, 0..64] are covered by no chunk (dcp.load cannot fill them)"
            )],
        ),
        (
            "dcp2_overlap",
            vec![
                format!("{w}: chunks 0 and 1 overlap on [32..64, 0..64]"),
                format!(
                    "{w}: elements [96..128, 0..64] are covered by no chunk (dcp.load cannot fill them)"
                ),
            ],
        ),
        (
            "dcp2_outside",
            vec![format!(
                "{w}: chunk 1 (offsets [64, 0], sizes [96, 64]) lies outside the shape [128, 64]"
            )],
        ),
    ];
    for (dir, messages) in cases {
        let t = copy(dir);
        let (code, report) = verify(t.path(), &[]);
        assert_eq!(code, 1, "{dir}: {report:#}");
        let want: Vec<(String, String, String)> = messages
            .into_iter()
            .map(|m| ("bad_layout".into(), "error".into(), m))
            .collect();
        assert_eq!(on_metadata(&report), want, "{dir}");
        // The data files are dcp2's, byte for byte: only a chunk whose sizes changed
        // also disagrees with the data stored for it (the check of tests/checkpoint/torch_dcp.rs).
        let mut others: Vec<(String, String, Option<u64>)> = findings(&report)
            .into_iter()
            .filter(|f| f.1 != ".metadata")
            .collect();
        if dir == "dcp2_outside" {
            assert_eq!(others.len(), 1, "{report:#}");
            let (kind, path, _) = others.remove(0);
            assert_eq!(
                (kind.as_str(), path.as_str()),
                ("bad_tensor", "__1_0.distcp")
            );
            let data = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["kind"] == "bad_tensor")
                .unwrap();
            assert!(
                data["message"]
                    .as_str()
                    .unwrap()
                    .contains("stored with shape [64, 64], but .metadata declares [96, 64]"),
                "{data}"
            );
        }
        assert_eq!(
            others,
            vec![],
            "{dir}: only the coverage findings: {report:#}"
        );
        // The plain report names it too.
        let out = run(&["verify", t.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stdout).contains(&want[0].2), "{dir}");
    }
}
