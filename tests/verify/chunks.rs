//! Chunk digests: `manifest` lists the SHA-256 of every 64 MiB chunk of a file of at
//! least 1 GiB in the same read as its whole digest; `verify` checks those chunks on
//! every core and names the damaged chunk by its bytes; `sha256sum -c` still works.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::util::*;

const CHUNK: u64 = 64 << 20;
/// 1 GiB and 5 MiB: 17 chunks, the last one short.
const BIG: u64 = (1 << 30) + (5 << 20);

/// A sparse file of `BIG` bytes with a few marks written into it, and a small file.
fn model() -> Tree {
    let tree = Tree::new();
    tree.file("config.json", b"{\"layers\": 2}\n");
    let mut file = std::fs::File::create(tree.join("model.bin")).unwrap();
    file.set_len(BIG).unwrap();
    for (i, at) in [0, CHUNK - 3, 9 * CHUNK + 12_345, BIG - 10]
        .into_iter()
        .enumerate()
    {
        file.seek(SeekFrom::Start(at)).unwrap();
        file.write_all(&noise(i as u64, 10)).unwrap();
    }
    tree
}

fn chunk_digests(path: &Path) -> Vec<String> {
    let mut file = std::fs::File::open(path).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; CHUNK as usize];
    loop {
        let mut filled = 0;
        while filled < buf.len() {
            match file.read(&mut buf[filled..]).unwrap() {
                0 => break,
                n => filled += n,
            }
        }
        if filled == 0 {
            return out;
        }
        out.push(format!("{:x}", Sha256::digest(&buf[..filled])));
    }
}

#[test]
fn large_files_get_chunk_digests_that_verify_checks_and_locates() {
    let tree = model();
    let o = run(&["manifest", tree.path().to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = manifest(tree.path());
    assert_eq!(
        m["chunk_digests"],
        serde_json::json!({"algorithm": "sha256", "chunk_size": CHUNK, "threshold": 1u64 << 30})
    );
    let files = m["files"].as_array().unwrap();
    assert!(
        files[0].get("chunks").is_none(),
        "a small file has no chunk list"
    );
    let chunks = &files[1]["chunks"];
    assert_eq!(chunks["algorithm"], "sha256-sharded-67108864");
    let listed: Vec<String> = serde_json::from_value(chunks["sha256"].clone()).unwrap();
    assert_eq!(listed, chunk_digests(&tree.join("model.bin")));
    assert_eq!(listed.len(), 17);

    if let Ok(o) = std::process::Command::new("sha256sum")
        .args(["-c", "--quiet", "SHA256SUMS"])
        .current_dir(tree.path())
        .output()
    {
        assert!(o.status.success(), "sha256sum -c: {}", text(&o.stdout));
    }

    for jobs in ["1", "2"] {
        let (code, report) = run_json(&["verify", tree.path().to_str().unwrap(), "-j", jobs]);
        assert_eq!(code, 0, "{report}");
        assert_eq!(report["bytes_checked"], BIG + 14);
    }

    // One byte of chunk 9 flipped: that chunk is named, the range is its first 1 MiB.
    let path = tree.join("model.bin");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let at = 9 * CHUNK + 12_345;
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(at)).unwrap();
    file.read_exact(&mut byte).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[byte[0] ^ 0x10]).unwrap();
    drop(file);
    let (code, report) = run_json(&["verify", tree.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [("hash_mismatch".into(), "model.bin".into(), Some(9 * CHUNK))]
    );
    let finding = &report["findings"][0];
    assert_eq!(finding["end"], 9 * CHUNK + (1 << 20));
    assert_eq!(finding["expected"], listed[9].as_str());
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.contains("1 of 17 chunk(s) of 64 MiB")
            && message.contains(&format!("chunk 9 (bytes {}..{})", 9 * CHUNK, 10 * CHUNK)),
        "{message}"
    );
}

/// `--range FILE:START..END` reads only the chunks the range overlaps: a damaged chunk
/// inside it is named as the whole check names it, one outside it is not seen, nor is a
/// file the manifest does not list, and the report says which bytes were checked.
#[test]
fn a_range_is_checked_by_its_chunks_alone() {
    let tree = model();
    let o = run(&["manifest", tree.path().to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listed: Vec<String> =
        serde_json::from_value(manifest(tree.path())["files"][1]["chunks"]["sha256"].clone())
            .unwrap();
    tree.file("stray.txt", b"not in the manifest\n");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(tree.join("model.bin"))
        .unwrap();
    // Chunk 2 (a hole) and chunk 9 (next to a mark) damaged.
    for at in [2 * CHUNK + 7, 9 * CHUNK + 20_000] {
        file.seek(SeekFrom::Start(at)).unwrap();
        file.write_all(b"!").unwrap();
    }
    drop(file);
    let dir = tree.path().to_str().unwrap();

    // The whole check sees both chunks and the stray file.
    let (code, report) = run_json(&["verify", dir]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["partial"], serde_json::Value::Null);
    let message = report["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("2 of 17 chunk(s)"), "{message}");
    assert_eq!(findings(&report).len(), 2, "{report}");

    // Chunk 9 exactly (END on a chunk boundary takes nothing of chunk 10).
    let (code, report) = run_json(&["verify", dir, "--range", "model.bin:576MiB..640MiB"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [("hash_mismatch".into(), "model.bin".into(), Some(9 * CHUNK))],
        "chunk 2 and the stray file are not read"
    );
    let finding = &report["findings"][0];
    assert_eq!(finding["end"], 9 * CHUNK + (1 << 20));
    assert_eq!(finding["expected"], listed[9].as_str());
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.contains("1 of 17 chunk(s) of 64 MiB")
            && message.contains(&format!("chunk 9 (bytes {}..{})", 9 * CHUNK, 10 * CHUNK)),
        "{message}"
    );
    assert_eq!(
        report["partial"],
        serde_json::json!([{"path": "model.bin", "start": 9 * CHUNK, "end": 10 * CHUNK,
            "first_chunk": 9, "last_chunk": 9, "chunks": 17, "chunk_size": CHUNK}])
    );
    assert_eq!(
        (
            report["bytes_checked"].as_u64(),
            report["files_checked"].as_u64()
        ),
        (Some(CHUNK), Some(1))
    );

    // The text summary says the check was partial and which bytes it read.
    let o = run(&["verify", dir, "--range", "model.bin:600000000..600000001"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "chunk 8 is whole: {out}");
    assert!(
        out.starts_with(&format!("verified {dir} (partial: --range): 1 files, 67.1 MB"))
            && out.contains(&format!(
                "\n  range      model.bin bytes {}..{}: chunk 8 of 17 (64 MiB) against their SHA-256s\n",
                8 * CHUNK,
                9 * CHUNK
            )),
        "{out}"
    );

    // Other chunks only, one of them the short last one, open ends: clean, partial.
    let (code, report) = run_json(&[
        "verify",
        dir,
        "--range",
        "model.bin:1GiB..",
        "--range",
        "model.bin:..64MiB",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(findings(&report), []);
    let spans: Vec<(u64, u64)> = report["partial"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["start"].as_u64().unwrap(), r["end"].as_u64().unwrap()))
        .collect();
    assert_eq!(spans, [(0, CHUNK), (16 * CHUNK, BIG)]);
    assert_eq!(report["bytes_checked"], CHUNK + (BIG - 16 * CHUNK));
    let o = run(&["verify", dir, "--range", "model.bin:1GiB.."]);
    let out = text(&o.stdout);
    assert!(
        o.status.success()
            && out.contains(&format!("verified {dir} (partial: --range): 1 files, 5.2 MB"))
            && out.contains(&format!(
                "  range      model.bin bytes {}..{BIG}: chunk 16 of 17 (64 MiB) against their SHA-256s",
                16 * CHUNK
            ))
            && out.contains("note: partial check: only the chunks that cover the ranges asked for were read")
            && out.ends_with("OK: no problems found\n"),
        "{out}"
    );
}

/// A range the manifest cannot check stops `verify --range` before anything is read
/// (exit 2, the reason named), never a silent whole-file check.
#[test]
fn ranges_the_manifest_cannot_check_are_refused() {
    let tree = Tree::new();
    tree.file("config.json", b"{\"layers\": 2}\n");
    let file = std::fs::File::create(tree.join("model.bin")).unwrap();
    file.set_len(BIG).unwrap();
    drop(file);
    let dir = tree.path().to_str().unwrap();
    let o = run(&["verify", dir, "--range", "model.bin:0..1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("checks bytes against the chunk digests of the manifest")
            && text(&o.stderr).contains("manifest.json` does not exist"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["manifest", dir, "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for (range, extra, why) in [
        (
            "nope.bin:0..1",
            None,
            "`nope.bin`: the manifest does not list it",
        ),
        ("model.bin:2GiB..1GiB", None, "the start is after the end"),
        (
            "model.bin:..2GiB",
            None,
            "the end is past the end of the file (1078984704 bytes, as the manifest records)",
        ),
        (
            "config.json:0..4",
            None,
            "`config.json`: it has no chunk digests in the manifest (only files of at least 1 GiB get them",
        ),
        (
            "model.bin:0..1",
            Some("--scan-values"),
            "--range reads only the chunks of the ranges given, and --scan-values needs every file read whole",
        ),
        ("model.bin:1..two", None, "the end of `model.bin:1..two`"),
        ("model.bin", None, "is not FILE:START..END"),
    ] {
        let mut args = vec!["verify", dir, "--range", range];
        args.extend(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{range}: {}", text(&o.stdout));
        assert!(
            text(&o.stderr).contains(why),
            "{range}: {}",
            text(&o.stderr)
        );
        assert!(
            o.stdout.is_empty(),
            "{range}: nothing verified: {}",
            text(&o.stdout)
        );
    }
    let (code, report) = run_json(&["verify", dir, "--range", "config.json:0..1"]);
    assert_eq!(code, 2);
    assert_eq!(report["error"]["kind"], "setting", "{report}");
    assert_eq!(report["error"]["path"], "config.json", "{report}");
}
