//! `stage` of a file whose manifest lists its 64 MiB chunks. From an object store the
//! chunks are fetched in parallel and checked as they arrive (`remote::s3_verify`); from
//! a disk the file is streamed and hashed whole (faster there, in little memory), and a
//! damaged byte is still named by the manifest's 1 MiB CRC chunks. Either way nothing
//! of a damaged file is left at the destination. The chunked copy itself is unit-tested
//! on this file in the store crate (`stage::tests`).

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::util::*;

pub const CHUNK: u64 = 64 << 20;
/// 1 GiB and 5 MiB: 17 chunks, the last one short.
pub const BIG: u64 = (1 << 30) + (5 << 20);

/// Writes into `dir` a sparse `model.bin` of `BIG` bytes with a few marks and a small
/// `config.json`, then their manifest (which lists the chunks of `model.bin`).
pub fn sparse_model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.json"), b"{\"layers\": 2}\n").unwrap();
    let mut file = std::fs::File::create(dir.join("model.bin")).unwrap();
    file.set_len(BIG).unwrap();
    for (i, at) in [0, CHUNK - 3, 5 * CHUNK + 99, BIG - 10]
        .into_iter()
        .enumerate()
    {
        file.seek(SeekFrom::Start(at)).unwrap();
        file.write_all(&noise(i as u64, 10)).unwrap();
    }
    drop(file);
    let o = run(&["manifest", dir.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        manifest(dir)["files"][1]["chunks"]["sha256"]
            .as_array()
            .map(Vec::len),
        Some(17)
    );
}

/// Gives `rel` in the manifest of `dir` a list of the SHA-256 of its `chunk`-byte chunks
/// (as a writer with another chunk size would), the root digest recomputed.
pub fn add_chunk_list(dir: &Path, rel: &str, chunk: u64) {
    use sha2::Digest;
    let bytes = std::fs::read(dir.join(rel)).unwrap();
    let digests: Vec<String> = bytes
        .chunks(chunk as usize)
        .map(|c| format!("{:x}", sha2::Sha256::digest(c)))
        .collect();
    let mut m = manifest(dir);
    let entry = m["files"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["path"] == rel)
        .unwrap();
    entry["chunks"] = serde_json::json!({
        "algorithm": format!("sha256-sharded-{chunk}"),
        "sha256": digests,
    });
    m["root_sha256"] = shardsmith_manifest::root_digest(&m).into();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
}

/// Flips one bit of the byte at `at` of `path`.
pub fn flip(path: &Path, at: u64) {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(at)).unwrap();
    file.read_exact(&mut byte).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[byte[0] ^ 0x10]).unwrap();
}

/// True when both files hold the same bytes.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (mut a, mut b) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    let (mut x, mut y) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    loop {
        let n = a.read(&mut x).unwrap();
        if n == 0 {
            return b.read(&mut y).unwrap() == 0;
        }
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return false;
        }
    }
}

#[test]
fn a_large_file_on_a_disk_is_streamed_whole_and_a_damaged_byte_named_by_its_crc_chunk() {
    let tree = Tree::new();
    let src = tree.join("src");
    sparse_model(&src);

    let o = run(&["stage", &tree.s("src"), &tree.s("clean"), "--no-progress"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let summary = text(&o.stdout) + &text(&o.stderr);
    assert!(
        summary.contains("verified  every file's SHA-256")
            && !summary.contains("chunks as they arrived"),
        "{summary}"
    );
    assert!(same_file(
        &src.join("model.bin"),
        &tree.join("clean/model.bin")
    ));
    assert_eq!(manifest(&src), manifest(&tree.join("clean")));

    // One byte of chunk 5 flipped at the source.
    flip(&src.join("model.bin"), 5 * CHUNK + 99);
    let (code, report) = run_json(&["stage", &tree.s("src"), &tree.s("bad")]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["complete"], false);
    let mismatches = report["mismatches"].as_array().unwrap();
    assert_eq!(mismatches.len(), 1, "{report}");
    assert_eq!(mismatches[0]["path"], "model.bin");
    let mib = 1u64 << 20;
    assert_eq!(
        mismatches[0]["bytes"],
        serde_json::json!([5 * CHUNK, 5 * CHUNK + mib]),
        "the 1 MiB CRC chunk that holds the flipped byte"
    );
    let mut left: Vec<String> = std::fs::read_dir(tree.join("bad"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["config.json"], "nothing of model.bin, no manifest");
}
