//! `pack --format webdataset --compression gz|zstd` end to end: the shards are the plain
//! tars compressed, levels are recorded, and `verify` finds damage to the compressed
//! stream with the exact finding. Round trip, rollover, `--jobs`, resume and `verify`
//! as for every format: tests/pack/conformance.rs.

use std::io::Read;
use std::path::Path;

use crate::util::*;

/// `(option, extension, recorded compression)` of each codec.
const CODECS: [(&str, &str, &str); 2] = [("gz", "tar.gz", "gz:6"), ("zstd", "tar.zst", "zstd:3")];

fn decompress(path: &Path) -> Vec<u8> {
    let file = std::fs::File::open(path).unwrap();
    let mut out = Vec::new();
    if path.to_string_lossy().ends_with(".gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut out)
            .unwrap();
    } else {
        zstd::stream::read::Decoder::new(file)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
    }
    out
}

fn pack(input: &Path, output: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["pack", input.to_str().unwrap(), output.to_str().unwrap()];
    args.extend(extra);
    let (code, report) = run_json(&args);
    assert_eq!(code, 0, "{report}");
    report
}

/// Samples whose files do not compress to nothing, so that a shard's compressed stream
/// has a middle to damage.
fn noisy(n: usize) -> Tree {
    let tree = Tree::new();
    for i in 0..n {
        tree.file(&format!("n/s{i:04}.bin"), noise(i as u64, 3000 + i * 37));
        tree.file(&format!("n/s{i:04}.json"), format!("{{\"i\": {i}}}"));
    }
    tree
}

#[test]
fn compressed_shards_are_the_plain_tars_compressed() {
    let out = Tree::new();
    let samples = samples();
    let plain = pack(&samples, &out.join("plain"), &["--shard-size", "64KiB"]);
    let plain_manifest = manifest(&out.join("plain"));
    for (codec, ext, recorded) in CODECS {
        let dir = out.join(codec);
        let report = pack(
            &samples,
            &dir,
            &["--shard-size", "64KiB", "--compression", codec],
        );
        assert_eq!(
            report["shard_pattern"],
            format!("shard-{{000000..000001}}.{ext}")
        );
        assert_eq!(report["samples"], plain["samples"]);
        let m = manifest(&dir);
        assert_eq!(m["options"]["compression"], recorded);
        let (files, plain_files) = (
            m["files"].as_array().unwrap(),
            plain_manifest["files"].as_array().unwrap(),
        );
        assert_eq!(files.len(), plain_files.len());
        for (entry, plain_entry) in files.iter().zip(plain_files) {
            for key in ["samples", "first_key", "last_key", "format"] {
                assert_eq!(entry[key], plain_entry[key], "{codec}: {key}");
            }
            let shard = dir.join(entry["path"].as_str().unwrap());
            let tar = std::fs::read(
                out.join("plain")
                    .join(plain_entry["path"].as_str().unwrap()),
            )
            .unwrap();
            assert_eq!(decompress(&shard), tar, "{codec}: the same tar, compressed");
            assert!(entry["size"].as_u64().unwrap() < tar.len() as u64 / 2);
        }
        let verify = run(&["verify", dir.to_str().unwrap()]);
        assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
        assert!(text(&verify.stdout).contains("2 file(s) of a known format walked"));
    }
    // `plain` without the option, and `none` given, are the same dataset.
    let none = pack(
        &samples,
        &out.join("none"),
        &["--shard-size", "64KiB", "--compression", "none"],
    );
    assert_eq!(none["root_sha256"], plain["root_sha256"]);
    assert!(plain_manifest["options"].get("compression").is_none());
}

#[test]
fn gzip_header_and_zstd_frame_are_fixed() {
    let out = Tree::new();
    for (codec, ext, _) in CODECS {
        pack(&samples(), &out.join(codec), &["--compression", codec]);
        let shard = std::fs::read(out.join(codec).join(format!("shard-000000.{ext}"))).unwrap();
        if codec == "gz" {
            // mtime 0, no file name, XFL 0 (level 6), OS 255.
            assert_eq!(shard[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
        } else {
            assert_eq!(shard[..4], [0x28, 0xb5, 0x2f, 0xfd]);
            assert_eq!(shard[4] & 0b1100_0111, 0b0000_0100, "checksum, no size");
        }
    }
}

#[test]
fn the_default_level_named_is_the_same_dataset_and_levels_are_recorded() {
    // Byte-identical for any --jobs: tests/pack/conformance.rs.
    let input = corpus(300, 20_000);
    let out = Tree::new();
    for (codec, ext, recorded) in CODECS {
        let default = out.join(codec);
        pack(
            input.path(),
            &default,
            &["--shard-size", "256KiB", "--compression", codec],
        );
        let expected = snapshot(&default);
        let dir = out.join(&format!("{codec}-named"));
        pack(
            input.path(),
            &dir,
            &["--shard-size", "256KiB", "--compression", recorded],
        );
        assert_eq!(snapshot(&dir), expected);
        // Another level: other bytes, the same tars.
        let other = if codec == "gz" { "gz:1" } else { "zstd:19" };
        let dir = out.join(&format!("{codec}-other"));
        pack(
            input.path(),
            &dir,
            &["--shard-size", "256KiB", "--compression", other],
        );
        assert_eq!(manifest(&dir)["options"]["compression"], other);
        let first = format!("shard-000000.{ext}");
        assert_ne!(snapshot(&dir)[&first], expected[&first]);
        assert_eq!(
            decompress(&dir.join(&first)),
            decompress(&default.join(&first))
        );
    }
}

#[test]
fn shard_size_counts_the_uncompressed_tar() {
    // 40 samples of about 4.6 KiB each in a tar: about 7 to a shard.
    let input = noisy(40);
    let out = Tree::new();
    pack(input.path(), &out.join("plain"), &["--shard-size", "32KiB"]);
    pack(
        input.path(),
        &out.join("gz"),
        &["--shard-size", "32KiB", "--compression", "gz"],
    );
    let m = manifest(&out.join("gz"));
    let plain = manifest(&out.join("plain"));
    let counts = |m: &serde_json::Value| -> Vec<u64> {
        m["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["samples"].as_u64().unwrap())
            .collect()
    };
    // That every tar is within the limit: tests/pack/conformance.rs.
    assert_eq!(counts(&m), counts(&plain), "the same rollover");
}

#[test]
fn left_out_samples_and_reruns_work_as_for_plain_tars() {
    let input = noisy(10);
    input
        .file("bad/broken.json", "{not json")
        .file("bad/broken.txt", "its sample goes with it");
    let out = Tree::new();
    let dir = out.join("s");
    let report = pack(input.path(), &dir, &["--compression", "zstd:7"]);
    assert_eq!(report["samples"], 10);
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["bad/broken.json", "bad/broken.txt"]);
    let again = run(&[
        "pack",
        input.path().to_str().unwrap(),
        dir.to_str().unwrap(),
        "--compression",
        "zstd:7",
    ]);
    assert!(
        text(&again.stdout).starts_with("already complete"),
        "{}",
        text(&again.stdout)
    );
    let other = run(&[
        "pack",
        input.path().to_str().unwrap(),
        dir.to_str().unwrap(),
        "--compression",
        "gz",
    ]);
    assert_eq!(other.status.code(), Some(2));
    assert!(
        text(&other.stderr).contains("(`--compression zstd:7` vs `--compression gz:6`)"),
        "{}",
        text(&other.stderr)
    );
}

/// Verifies `dir` (with its manifest, then the shard alone, without it) and returns
/// the finding kinds for `shard` in each report.
fn damaged(dir: &Path, shard: &str) -> (Vec<String>, Vec<String>) {
    let kinds = |report: &serde_json::Value| -> Vec<String> {
        findings(report)
            .into_iter()
            .filter(|(_, path, _)| path.ends_with(shard))
            .map(|(kind, _, _)| kind)
            .collect()
    };
    let (code, with_manifest) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{with_manifest}");
    let (code, alone) = run_json(&["verify", dir.join(shard).to_str().unwrap()]);
    assert_eq!(code, 1, "{alone}");
    (kinds(&with_manifest), kinds(&alone))
}

#[test]
fn damage_to_the_compressed_stream_is_found_exactly() {
    let input = noisy(30);
    let out = Tree::new();
    for (codec, ext, _) in CODECS {
        let clean = out.join(&format!("{codec}-clean"));
        pack(input.path(), &clean, &["--compression", codec]);
        let shard = format!("shard-000000.{ext}");
        let bytes = std::fs::read(clean.join(&shard)).unwrap();
        assert!(bytes.len() > 60_000, "{}", bytes.len());
        let damage = |name: &str, bytes: &[u8]| {
            let dir = out.join(&format!("{codec}-{name}"));
            copy_dir(&clean, &dir);
            std::fs::write(dir.join(&shard), bytes).unwrap();
            damaged(&dir, &shard)
        };

        // Truncated: the stream ends inside its data.
        let (with_manifest, alone) = damage("cut", &bytes[..bytes.len() / 2]);
        assert!(with_manifest.contains(&"size_mismatch".to_string()));
        assert_eq!(alone[0], "truncated", "{codec}: {alone:?}");
        let (_, report) = run_json(&[
            "verify",
            out.join(&format!("{codec}-cut"))
                .join(&shard)
                .to_str()
                .unwrap(),
        ]);
        let first = &report["findings"][0];
        assert_eq!(first["offset"], bytes.len() / 2);
        assert!(
            first["message"]
                .as_str()
                .unwrap()
                .contains(&format!("ends at byte {}", bytes.len() / 2)),
            "{first}"
        );

        // A flipped byte inside the compressed stream.
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 2] ^= 0x10;
        let (with_manifest, alone) = damage("flip", &flipped);
        assert!(with_manifest.contains(&"hash_mismatch".to_string()));
        assert!(
            with_manifest.contains(&"decompression_failed".to_string()),
            "{codec}: {with_manifest:?}"
        );
        assert!(
            alone.contains(&"decompression_failed".to_string()),
            "{codec}: {alone:?}"
        );

        // A zero-filled hole, as storage leaves it.
        let mut hole = bytes.clone();
        hole[bytes.len() / 3..bytes.len() / 3 + 4096].fill(0);
        let (_, alone) = damage("hole", &hole);
        assert_eq!(alone[0], "decompression_failed", "{codec}: {alone:?}");
    }
}

#[test]
fn bad_levels_are_refused_with_the_exact_error() {
    let out = Tree::new();
    let samples = samples();
    for (value, error) in [
        ("gz:0", "error: --compression: `gz:0`: gz levels are 1 to 9"),
        (
            "gz:10",
            "error: --compression: `gz:10`: gz levels are 1 to 9",
        ),
        (
            "zstd:23",
            "error: --compression: `zstd:23`: zstd levels are 1 to 22",
        ),
        (
            "snappy",
            "error: --compression: unknown webdataset compression `snappy`; use none, gz[:1-9] or zstd[:1-22] (e.g. gz:6)",
        ),
    ] {
        let o = run(&[
            "pack",
            samples.to_str().unwrap(),
            &out.s("x"),
            "--compression",
            value,
        ]);
        assert_eq!(o.status.code(), Some(2), "{value}");
        assert_eq!(text(&o.stderr).lines().next(), Some(error), "{value}");
        assert!(!out.join("x").exists(), "nothing written for {value}");
    }
}

#[test]
fn manifest_records_what_compressed_shards_hold() {
    let out = Tree::new();
    let dir = out.join("s");
    pack(
        &samples(),
        &dir,
        &["--compression", "gz", "--shard-size", "64KiB"],
    );
    let packed = manifest(&dir);
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    std::fs::remove_file(dir.join("SHA256SUMS")).unwrap();
    let o = run(&["manifest", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listed = manifest(&dir);
    for (a, b) in listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(packed["files"].as_array().unwrap())
    {
        for key in [
            "path",
            "sha256",
            "samples",
            "first_key",
            "last_key",
            "format",
        ] {
            assert_eq!(a[key], b[key], "{key}");
        }
    }
}

#[test]
fn compressed_tars_under_other_names_are_told_by_content() {
    // Several zstd blocks: the first one decompresses even when the end is cut.
    let input = noisy(60);
    let out = Tree::new();
    let dir = out.join("loose");
    std::fs::create_dir(&dir).unwrap();
    for (codec, ext, name) in [("zstd", "tar.zst", "data.zst"), ("gz", "tar.gz", "data.gz")] {
        let packed = out.join(codec);
        pack(input.path(), &packed, &["--compression", codec]);
        std::fs::copy(packed.join(format!("shard-000000.{ext}")), dir.join(name)).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, b"{\"text\": \"a compressed corpus, not a tar\"}\n")
        .unwrap();
    std::fs::write(dir.join("corpus.jsonl.gz"), gz.finish().unwrap()).unwrap();
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["checked"]["structure"], 2, "{report}");
    assert_eq!(report["checked"]["unchecked"], 1, "{report}");
    assert_eq!(report["samples"], 120, "{report}");
    for name in ["data.zst", "data.gz"] {
        let mut cut = std::fs::read(dir.join(name)).unwrap();
        cut.truncate(cut.len() - 100);
        std::fs::write(dir.join(name), cut).unwrap();
    }
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    let kinds: Vec<(String, String)> = findings(&report)
        .into_iter()
        .map(|(kind, path, _)| (kind, path))
        .filter(|(_, path)| !path.starts_with("corpus"))
        .collect();
    assert!(
        kinds.contains(&("truncated".into(), "data.zst".into())),
        "{report}"
    );
    assert!(
        kinds.contains(&("truncated".into(), "data.gz".into())),
        "{report}"
    );
}
