//! `shardsmith verify` on real checkpoints (made by torch and safetensors, committed in
//! tests/fixtures/checkpoints): every clean fixture passes with no false finding, and
//! every corruption class of the reference notes (§6) applied to a copy gives its exact
//! finding.

use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// A copy of fixture directory `name` (whole tree) in a temp dir; returns (tree, path).
pub fn copy(name: &str) -> Tree {
    let t = Tree::new();
    copy_dir(&fixtures().join(name), t.path());
    t
}

pub fn verify(path: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_json(&args)
}

/// Overwrites `len` bytes at `at` with zeros.
pub fn zero(path: &Path, at: usize, len: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at..at + len].fill(0);
    std::fs::write(path, b).unwrap();
}

pub fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// The finding of `kind` on `path`, which must exist.
pub fn finding<'a>(report: &'a Value, kind: &str, path: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind && f["path"] == path)
        .unwrap_or_else(|| panic!("no {kind} on {path} in {report:#}"))
}

fn kinds(report: &Value) -> Vec<(String, String)> {
    findings(report)
        .into_iter()
        .map(|(k, p, _)| (k, p))
        .collect()
}

#[test]
fn clean_fixtures_have_no_false_finding() {
    let expected: &[(&str, &[(&str, &str)])] = &[
        (
            "plain",
            &[
                ("crc_not_recorded", "nocrc.pt"),
                // Pickle protocol 4: torch.load(weights_only=True) refuses it.
                ("unsafe_pickle", "proto4.pt"),
                ("placeholder_data", "skipdata.pt"),
            ],
        ),
        ("sharded", &[]),
        ("dcp1", &[]),
        ("dcp2", &[]),
        // dcp_st: dcp.load cannot read the safetensors format (tests/checkpoint/torch_dcp.rs).
        ("deepspeed", &[]),
        // argparse.Namespace and numpy arrays: torch.load(weights_only=True) refuses them.
        (
            "megatron",
            &[
                (
                    "unsafe_pickle",
                    "iter_0000005/mp_rank_00/model_optim_rng.pt",
                ),
                (
                    "unsafe_pickle",
                    "iter_0000005/mp_rank_01/model_optim_rng.pt",
                ),
                (
                    "unsafe_pickle",
                    "iter_0000010/mp_rank_00/model_optim_rng.pt",
                ),
                (
                    "unsafe_pickle",
                    "iter_0000010/mp_rank_01/model_optim_rng.pt",
                ),
            ],
        ),
    ];
    for (dir, want) in expected {
        let t = copy(dir);
        // plain/legacy.pt holds float8 and other untyped storages, which torch.load
        // cannot read from a legacy file: an error, asserted beside torch's verdict in
        // torch_files.rs.
        let _ = std::fs::remove_file(t.join("legacy.pt"));
        for extra in [&[][..], &["--scan-values"][..]] {
            let (code, report) = verify(t.path(), extra);
            assert_eq!(code, 0, "{dir}: {report:#}");
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(k, p)| (k.to_string(), p.to_string()))
                .collect();
            assert_eq!(kinds(&report), want, "{dir}");
            assert!(
                report["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|f| f["severity"] == "warning")
            );
        }
        // With a manifest written at save time, verify is exact and still clean.
        assert!(
            run(&["manifest", t.path().to_str().unwrap()])
                .status
                .success()
        );
        let (code, report) = verify(t.path(), &[]);
        assert_eq!(code, 0, "{dir} with manifest: {report:#}");
        let formats: Vec<String> = manifest(t.path())["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["format"].as_str().map(str::to_string))
            .collect();
        assert!(
            !formats.is_empty(),
            "{dir}: the manifest records checkpoint formats"
        );
    }
}

#[test]
fn c2_zeroed_block_in_a_torch_zip_is_a_crc_mismatch_located_to_the_block() {
    let t = copy("plain");
    // model/data/0 (tensor `w`, 32 KiB of f32) holds bytes 1344..34112.
    zero(&t.join("model.pt"), 4096, 4096);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "crc_mismatch", "model.pt");
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(4096), Some(8192))
    );
    assert!(f["message"].as_str().unwrap().contains("tensor `w`"), "{f}");
    // A flipped byte has no zero run: the whole member is the range.
    let t = copy("plain");
    let path = t.join("model.pt");
    let mut b = std::fs::read(&path).unwrap();
    b[20_000] ^= 1;
    std::fs::write(&path, b).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "crc_mismatch", "model.pt");
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(1344), Some(34112))
    );
}

#[test]
fn c2_zeroed_block_in_safetensors_is_a_zero_run_and_exact_with_a_manifest() {
    let t = copy("plain");
    let path = t.join("model.safetensors");
    zero(&path, 8192, 4096);
    let (code, report) = verify(&path, &[]);
    assert_eq!(
        code, 1,
        "safetensors has no checksum, but a whole 4 KiB block of zeros mid-row in `w`, which has no other zero element, cannot be data"
    );
    let f = finding(&report, "zero_run", "model.safetensors");
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(8192), Some(12288))
    );
    assert_eq!(f["severity"], "error");
    // With a manifest made before the damage: an exact error, located to the chunk.
    let t = copy("plain");
    assert!(
        run(&["manifest", t.path().to_str().unwrap()])
            .status
            .success()
    );
    zero(&t.join("model.safetensors"), 8192, 4096);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        finding(&report, "hash_mismatch", "model.safetensors")["offset"],
        0
    );
    finding(&report, "zero_run", "model.safetensors");
}

#[test]
fn c2_zeroed_bytes_in_a_dcp_rank_file_fail_its_slice_crc() {
    let t = copy("dcp2");
    zero(&t.join("__1_0.distcp"), 6000, 1024);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "crc_mismatch", "__1_0.distcp");
    assert!(
        f["offset"].as_u64().unwrap() <= 6000 && f["end"].as_u64().unwrap() >= 7024,
        "{f}"
    );
    assert_eq!(kinds(&report).len(), 1, "{report:#}");
}

#[test]
fn c3_punched_hole_is_named_as_a_hole() {
    let t = copy("plain");
    let punch = |file: &str, at: u64, len: u64| {
        let ok = std::process::Command::new("fallocate")
            .args(["-p", "-o", &at.to_string(), "-l", &len.to_string()])
            .arg(t.join(file))
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "fallocate --punch-hole (util-linux) must work here");
    };
    // optimizer.pt: exp_avg's storage data/1 covers 16384..24576 among others.
    punch("optimizer.pt", 16_384, 8192);
    punch("model.safetensors", 8192, 8192);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "crc_mismatch", "optimizer.pt");
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(16_384), Some(24_576))
    );
    assert!(
        f["message"].as_str().unwrap().contains("filesystem hole"),
        "{f}"
    );
    let f = finding(&report, "hole", "model.safetensors");
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(8192), Some(16_384))
    );
}

#[test]
fn c1_truncation_and_a_killed_save_lose_the_central_directory() {
    let len = checkpoint_fixture("plain/model.pt").len() as u64;
    // Half the file; the last 10 bytes; a save killed inside data/0 (local headers of the
    // members before it are intact, nothing after); the central directory zeroed (P3).
    for cut in [len / 2, len - 10, 20_000] {
        let t = copy("plain");
        truncate(&t.join("model.pt"), cut);
        let (code, report) = verify(t.path(), &[]);
        assert_eq!(code, 1);
        let f = finding(&report, "truncated", "model.pt");
        assert_eq!(f["offset"].as_u64(), Some(cut));
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .contains("failed finding central directory")
        );
    }
    let t = copy("plain");
    zero(&t.join("model.pt"), len as usize - 2000, 2000);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    finding(&report, "truncated", "model.pt");
}

#[test]
fn c1_safetensors_shorter_or_longer_than_its_header_says() {
    let t = copy("plain");
    let path = t.join("model.safetensors");
    let len = std::fs::metadata(&path).unwrap().len();
    truncate(&path, len - 3);
    let (code, report) = verify(&path, &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "truncated", "model.safetensors");
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(len - 3), Some(len))
    );
    truncate(&path, len + 64);
    let (_, report) = verify(&path, &[]);
    let f = finding(&report, "trailing_data", "model.safetensors");
    assert_eq!(f["offset"].as_u64(), Some(len));
}

#[test]
fn c4_damaged_headers_are_named() {
    // safetensors: 2^40 header length, zeroed length, zeros inside the JSON.
    let cases: [(usize, &[u8], &str); 3] = [
        (0, &(1u64 << 40).to_le_bytes(), "exceeds"),
        (0, &[0; 8], "too small"),
        (40, &[0; 10], "not valid JSON"),
    ];
    for (at, bytes, text) in cases {
        let t = copy("plain");
        let path = t.join("model.safetensors");
        let mut b = std::fs::read(&path).unwrap();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        std::fs::write(&path, b).unwrap();
        let (code, report) = verify(&path, &[]);
        assert_eq!(code, 1);
        let f = finding(&report, "bad_header", "model.safetensors");
        assert!(f["message"].as_str().unwrap().contains(text), "{f}");
    }
    // torch zip: bytes of data.pkl zeroed (P1); the local header of data/1 zeroed (P2).
    let t = copy("plain");
    zero(&t.join("model.pt"), 300, 10);
    let (code, report) = verify(&t.join("model.pt"), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "crc_mismatch", "model.pt");
    assert!(f["message"].as_str().unwrap().contains("data.pkl"), "{f}");
    let t = copy("plain");
    zero(&t.join("model.pt"), 34_128, 30);
    let (code, report) = verify(&t.join("model.pt"), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "bad_header", "model.pt");
    assert_eq!(f["offset"].as_u64(), Some(34_128), "{f}");
    assert!(
        f["message"].as_str().unwrap().contains("model/data/1"),
        "{f}"
    );
}

#[test]
fn c5_wrong_content_is_named_not_misread() {
    let t = copy("plain");
    let lfs = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 46344\n";
    t.file("model.safetensors", lfs)
        .file(
            "model.pt",
            "<!DOCTYPE html>\n<html><body>Access denied</body></html>\n",
        )
        .file("optimizer.pt", b"");
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let msg = |p| {
        finding(&report, "wrong_content", p)["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(msg("model.safetensors").contains("Git LFS pointer of a 46344-byte file"));
    assert!(msg("model.pt").contains("HTML page"));
    assert!(msg("optimizer.pt").contains("empty"));
}

#[test]
fn c6_c7_c12_dcp_missing_rank_truncated_rank_stale_file_and_interrupted_finish() {
    let t = copy("dcp2");
    std::fs::remove_file(t.join("__1_0.distcp")).unwrap();
    std::fs::copy(fixtures().join("dcp1/__0_0.distcp"), t.join("__2_0.distcp")).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    finding(&report, "missing_file", "__1_0.distcp");
    assert_eq!(
        finding(&report, "stale_file", "__2_0.distcp")["severity"],
        "warning"
    );

    let t = copy("dcp2");
    truncate(&t.join("__1_0.distcp"), 5000);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "truncated", "__1_0.distcp");
    assert!(f["message"].as_str().is_some());
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "truncated"
                && f["message"].as_str().unwrap().contains("past the end")),
        "the .metadata byte range past the end is reported: {report:#}"
    );

    let t = copy("dcp2");
    std::fs::rename(t.join(".metadata"), t.join(".metadata.tmp")).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "missing_file", ".metadata");
    assert!(f["message"].as_str().unwrap().contains("interrupted"));
    finding(&report, "leftover_temp_file", ".metadata.tmp");
}

#[test]
fn c6_sharded_index_missing_shard_swapped_shards_and_a_killed_save_file() {
    let t = copy("sharded");
    // safetensors' save_file writes `.tmpXXXXXX`, pre-sized and sparse, then renames:
    // killed, it leaves the temp file and no shard.
    let shard = t.join("model-00002-of-00003.safetensors");
    let len = std::fs::metadata(&shard).unwrap().len();
    std::fs::remove_file(&shard).unwrap();
    let tmp = std::fs::File::create(t.join(".tmpx7Yq2a")).unwrap();
    tmp.set_len(len).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    finding(&report, "missing_file", "model-00002-of-00003.safetensors");
    finding(&report, "leftover_temp_file", ".tmpx7Yq2a");

    let t = copy("sharded");
    let (a, b) = (
        t.join("model-00001-of-00003.safetensors"),
        t.join("model-00003-of-00003.safetensors"),
    );
    std::fs::rename(&a, t.join("x")).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(t.join("x"), &b).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(
        &report,
        "index_mismatch",
        "model-00001-of-00003.safetensors",
    );
    assert_eq!(f["severity"], "error");
}

#[test]
fn c6_c8_deepspeed_and_megatron_layouts() {
    let t = copy("deepspeed");
    std::fs::remove_file(t.join("global_step10/zero_pp_rank_1_mp_rank_00_optim_states.pt"))
        .unwrap();
    t.file("latest", "global_step99");
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    let f = finding(
        &report,
        "missing_file",
        "global_step10/zero_pp_rank_1_mp_rank_00_optim_states.pt",
    );
    assert!(f["message"].as_str().unwrap().contains("partition 1 of 2"));
    finding(&report, "bad_pointer", "latest");

    let t = copy("megatron");
    std::fs::remove_dir_all(t.join("iter_0000010/mp_rank_01")).unwrap();
    t.file("latest_checkpointed_iteration.txt", "11");
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    finding(
        &report,
        "missing_file",
        "iter_0000010/mp_rank_01/model_optim_rng.pt",
    );
    finding(&report, "bad_pointer", "latest_checkpointed_iteration.txt");
    t.file("latest_checkpointed_iteration.txt", "garbage");
    let (_, report) = verify(t.path(), &[]);
    assert!(
        finding(&report, "bad_pointer", "latest_checkpointed_iteration.txt")["message"]
            .as_str()
            .unwrap()
            .contains("garbage")
    );
}

#[test]
fn c10_nan_and_inf_with_scan_values_in_every_float_dtype() {
    let t = copy("values");
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(
        (code, kinds(&report).len()),
        (0, 0),
        "not scanned unless asked"
    );
    let (code, report) = verify(t.path(), &["--scan-values"]);
    assert_eq!(code, 1);
    let count = |kind: &str, path: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == kind && f["path"] == path)
            .count()
    };
    // f32, bf16, f16, e5m2, e4m3 each hold one NaN; all but e4m3 (no Inf) hold ±Inf.
    for file in ["nan.pt", "nan.safetensors"] {
        assert_eq!(count("nan_values", file), 5, "{file}: {report:#}");
        assert_eq!(count("inf_values", file), 4, "{file}");
    }
}

#[test]
fn dcp_saved_as_safetensors_checks_its_blob_at_file_offsets() {
    let t = copy("dcp_st");
    let path = t.join("__0_0.distcp");
    let bytes = std::fs::read(&path).unwrap();
    let base = bytes
        .windows(15)
        .position(|w| w == b"{\"__metadata__\"")
        .unwrap()
        - 8;
    let n = u64::from_le_bytes(bytes[base..base + 8].try_into().unwrap()) as usize;
    // Tensors sorted by name: `model.b` (32 bytes of f32), then `model.w` (32 KiB).
    let at = base + 8 + n + 32 + 4096;
    zero(&path, at, 4096);
    let (code, report) = verify(t.path(), &[]);
    // 1: dcp.load cannot read the format (tests/checkpoint/torch_dcp.rs); the zero run is a warning.
    assert_eq!(code, 1);
    let f = finding(&report, "zero_run", "__0_0.distcp");
    assert_eq!(
        f["severity"], "warning",
        "no checksum covers a safetensors blob"
    );
    assert_eq!(
        (f["offset"].as_u64(), f["end"].as_u64()),
        (Some(at as u64), Some(at as u64 + 4096))
    );
    assert!(f["message"].as_str().unwrap().contains("model.w"), "{f}");
    truncate(&path, bytes.len() as u64 - 100);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    finding(&report, "truncated", "__0_0.distcp");
}
