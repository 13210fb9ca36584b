//! A fixture of the chunk checks' tests: a file whose manifest entry lists chunk SHA-256s.

use sha2::{Digest as _, Sha256};

use crate::{ChunkDigests, MANIFEST_FILE, Manifest};

const CRC: u64 = 4096;
pub(super) const CHUNK: usize = 16 << 10;

/// A directory with one 100,000-byte file whose manifest entry lists the SHA-256 of
/// each 16 KiB chunk (CRCs every 4 KiB), and the manifest as written.
pub(super) fn dataset(algorithm: Option<&str>) -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.path().join("big.bin"), &data).unwrap();
    let mut digester = crate::Digester::new(CRC);
    digester.update(&data);
    let mut entry = crate::FileEntry::new("big.bin", &digester.finish());
    let digests: Vec<[u8; 32]> = data
        .chunks(CHUNK)
        .map(|c| Sha256::digest(c).into())
        .collect();
    let mut list = ChunkDigests::new(CHUNK as u64, &digests);
    if let Some(name) = algorithm {
        list.algorithm = name.into();
    }
    entry.chunks = Some(list);
    let mut manifest = Manifest::new(crate::ManifestKind::Directory, CRC, vec![entry]);
    manifest.seal();
    std::fs::write(dir.path().join(MANIFEST_FILE), manifest.to_json_bytes()).unwrap();
    (dir, manifest)
}

/// Flips the lowest bit of byte `at` of `big.bin`.
pub(super) fn flip(dir: &std::path::Path, at: usize) {
    let path = dir.join("big.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at] ^= 1;
    std::fs::write(&path, bytes).unwrap();
}
