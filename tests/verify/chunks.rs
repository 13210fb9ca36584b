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
