use std::io::Write;

use shardsmith_manifest::Severity;

use super::gzip::MAX_GZ_HEADER;
use super::*;
use crate::format::{Field, Payload, ShardFormat};
use crate::webdataset::inspect::MAX_FINDINGS;
use crate::webdataset::{TarCompression, WebDataset, member_header};

const GZ: Option<TarCompression> = Some(TarCompression::Gz(6));
const ZSTD: Option<TarCompression> = Some(TarCompression::Zstd(3));

/// A shard of `(key, ext, bytes)` members written by our encoder.
fn shard(compression: Option<TarCompression>, members: &[(&str, &str, Vec<u8>)]) -> Vec<u8> {
    let (mut out, bytes) = crate::format::ShardOut::memory();
    let mut enc = WebDataset {
        compression,
        index: Default::default(),
    }
    .encoder();
    for (key, ext, data) in members {
        let mut fields = [Field {
            ext,
            size: data.len() as u64,
            payload: Payload::Bytes(data),
        }];
        enc.add(&mut out, key, &mut fields).unwrap();
    }
    enc.finish(&mut out).unwrap();
    drop(enc);
    bytes.lock().unwrap().clone()
}

/// Samples with content that does not compress to nothing.
fn members() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let noise = |n: usize, seed: u64| -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 56) as u8 & 0x3f
            })
            .collect()
    };
    vec![
        ("a", "jpg", noise(70_000, 1)),
        ("a", "json", b"{\"label\": 1}".to_vec()),
        ("b", "jpg", noise(512, 2)),
        ("b", "json", b"{}".to_vec()),
        ("c", "txt", Vec::new()),
        ("d", "bin", noise(150_000, 3)),
    ]
}

fn inspect_in(name: &str, bytes: &[u8], piece: usize) -> Inspection {
    let mut inspector = Box::new(ShardInspector::new(name));
    for chunk in bytes.chunks(piece.max(1)) {
        inspector.update(chunk);
    }
    inspector.finish()
}

/// Inspects `bytes` fed whole and in pieces of several sizes; the result must not
/// depend on them.
fn inspect(name: &str, bytes: &[u8]) -> Inspection {
    let whole = inspect_in(name, bytes, bytes.len());
    for piece in [1, 7, 262, 4096, 65_537] {
        assert_eq!(
            inspect_in(name, bytes, piece),
            whole,
            "{name}: the result must not depend on read sizes ({piece})"
        );
    }
    whole
}

fn found(i: &Inspection) -> Vec<(FindingKind, Severity, Option<u64>)> {
    i.findings
        .iter()
        .map(|f| (f.kind, f.severity, f.offset))
        .collect()
}

#[test]
fn compressed_shards_read_like_the_plain_tar() {
    let plain = inspect("s.tar", &shard(None, &members()));
    assert!(plain.findings.is_empty(), "{:?}", plain.findings);
    assert_eq!(plain.samples, Some(4));
    for (name, compression) in [("s.tar.gz", GZ), ("s.tgz", GZ), ("s.tar.zst", ZSTD)] {
        let bytes = shard(compression, &members());
        assert!(
            bytes.len() < 200_000,
            "{name} is compressed: {}",
            bytes.len()
        );
        assert_eq!(inspect(name, &bytes), plain, "{name}");
    }
}

#[test]
fn gzip_headers_of_other_writers_are_read() {
    let tar = shard(None, &members());
    let mut gz = flate2::GzBuilder::new()
        .filename("s.tar")
        .comment("made elsewhere")
        .extra(vec![1, 2, 3])
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(&tar).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(gz[3], 4 | 8 | 16, "extra, name and comment");
    let i = inspect("s.tar.gz", &gz);
    assert!(i.findings.is_empty(), "{:?}", i.findings);
    assert_eq!(i.samples, Some(4));
    // A header CRC (FHCRC), right and wrong.
    let mut with_crc = gz[..10].to_vec();
    with_crc[3] = 2;
    let crc = crc32fast::hash(&with_crc) as u16;
    with_crc.extend_from_slice(&crc.to_le_bytes());
    let header_len = 10 + 2 + 3 + "s.tar\0".len() + "made elsewhere\0".len();
    with_crc.extend_from_slice(&gz[header_len..]);
    assert_eq!(inspect("s.tar.gz", &with_crc).samples, Some(4));
    assert!(inspect("s.tar.gz", &with_crc).findings.is_empty());
    with_crc[10] ^= 1;
    assert_eq!(
        found(&inspect("s.tar.gz", &with_crc))[0],
        (FindingKind::DecompressionFailed, Severity::Error, Some(10))
    );
}

#[test]
fn truncated_streams_are_found_at_their_end() {
    for (name, compression) in [("s.tar.gz", GZ), ("s.tar.zst", ZSTD)] {
        let bytes = shard(compression, &members());
        let len = bytes.len();
        // Inside the header, inside the data, inside the gzip trailer.
        for cut in [5, 9, len / 3, len / 2, len - 5, len - 1] {
            let i = inspect(name, &bytes[..cut]);
            let stream = &i.findings[0];
            assert_eq!(
                (stream.kind, stream.offset),
                (FindingKind::Truncated, Some(cut as u64)),
                "{name} cut at {cut}: {:?}",
                i.findings
            );
            assert!(
                stream.message.contains(&format!("ends at byte {cut}")),
                "{}",
                stream.message
            );
            assert!(
                i.findings[1..]
                    .iter()
                    .all(|f| f.message.starts_with("in the decompressed tar: ")),
                "{:?}",
                i.findings
            );
        }
    }
}

#[test]
fn damage_inside_the_stream_is_found_with_its_offset() {
    for (name, compression) in [("s.tar.gz", GZ), ("s.tar.zst", ZSTD)] {
        let bytes = shard(compression, &members());
        for at in [bytes.len() / 4, bytes.len() / 2, bytes.len() - 12] {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x20;
            let i = inspect(name, &flipped);
            // The stream's own finding comes first: invalid data, a checksum that
            // differs, or (when the damage hid the end of the data) a cut stream.
            let damage = &i.findings[0];
            assert!(
                damage.is_error()
                    && [FindingKind::DecompressionFailed, FindingKind::Truncated]
                        .contains(&damage.kind),
                "{name} flipped at {at}: {:?}",
                i.findings
            );
            assert!(
                damage.end.or(damage.offset).unwrap() > at as u64,
                "found where the decoder notices it, never before the damage: {damage:?}"
            );
        }
        // A zero-filled hole.
        let mut hole = bytes.clone();
        hole[bytes.len() / 3..bytes.len() / 3 + 4096].fill(0);
        let i = inspect(name, &hole);
        assert!(
            i.findings
                .iter()
                .any(|f| f.kind == FindingKind::DecompressionFailed && f.is_error()),
            "{name}: {:?}",
            i.findings
        );
    }
}

#[test]
fn gzip_trailer_is_checked_exactly() {
    let bytes = shard(GZ, &members());
    let len = bytes.len() as u64;
    let mut crc = bytes.clone();
    crc[bytes.len() - 8] ^= 1;
    let i = inspect("s.tar.gz", &crc);
    assert_eq!(
        found(&i),
        [(
            FindingKind::DecompressionFailed,
            Severity::Error,
            Some(len - 8)
        )]
    );
    assert!(i.findings[0].message.contains("CRC-32"));
    let mut size = bytes.clone();
    size[bytes.len() - 2] ^= 1;
    assert_eq!(
        found(&inspect("s.tar.gz", &size)),
        [(
            FindingKind::DecompressionFailed,
            Severity::Error,
            Some(len - 4)
        )]
    );
}

#[test]
fn data_after_the_stream_is_reported() {
    for (name, compression) in [("s.tar.gz", GZ), ("s.tar.zst", ZSTD)] {
        let bytes = shard(compression, &members());
        let len = bytes.len() as u64;
        // A second member or frame: Python's tarfile reads only the first.
        let mut twice = bytes.clone();
        twice.extend_from_slice(&bytes);
        assert_eq!(
            found(&inspect(name, &twice)),
            [(FindingKind::TrailingData, Severity::Error, Some(len))],
            "{name}"
        );
        let mut zeros = bytes.clone();
        zeros.extend_from_slice(&[0; 100]);
        let i = inspect(name, &zeros);
        assert_eq!(
            found(&i),
            [(FindingKind::TrailingData, Severity::Warning, Some(len))],
            "{name}"
        );
        assert_eq!(i.findings[0].end, Some(len + 100));
    }
}

#[test]
fn names_that_disagree_with_the_content_are_reported() {
    let plain = shard(None, &members());
    let gz = shard(GZ, &members());
    // A gzip stream named .tar: webdataset reads it, wids cannot.
    let i = inspect("s.tar", &gz);
    assert_eq!(
        found(&i),
        [(FindingKind::WrongContent, Severity::Warning, Some(0))]
    );
    assert_eq!(i.samples, Some(4));
    // A plain tar named .tar.gz: read as the tar it is.
    let i = inspect("s.tar.gz", &plain);
    assert_eq!(
        found(&i),
        [(FindingKind::WrongContent, Severity::Warning, Some(0))]
    );
    assert_eq!(i.samples, Some(4));
    // Neither: the start of the stream is lost.
    let mut holed = gz.clone();
    holed[..4096].fill(0);
    let i = inspect("s.tar.gz", &holed);
    assert_eq!(
        found(&i)[0],
        (FindingKind::DecompressionFailed, Severity::Error, Some(0))
    );
    // Other names are not judged by their name.
    assert!(inspect("data.bin", &gz).findings.is_empty());
    // An empty file is an empty tar, whatever its name.
    let i = inspect("s.tar.gz", &[]);
    assert_eq!(
        found(&i),
        [(FindingKind::Truncated, Severity::Error, Some(0))]
    );
}

#[test]
fn tar_findings_keep_their_decompressed_offsets() {
    let mut tar = shard(None, &members());
    // A damaged header checksum in the second member.
    let second = 512 + 70_144;
    tar[second + 148] ^= 1;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    let i = inspect("s.tar.gz", &gz.finish().unwrap());
    assert_eq!(i.findings[0].kind, FindingKind::BadHeader);
    assert_eq!(i.findings[0].offset, Some(second as u64));
    assert!(
        i.findings[0]
            .message
            .starts_with("in the decompressed tar: header checksum mismatch"),
        "{}",
        i.findings[0].message
    );
}

#[test]
fn a_decompression_bomb_of_bad_headers_keeps_bounded_findings() {
    // 40,000 identical members with an upper-case extension, each a warning: tens of
    // MiB of tar from a few KiB of compressed bytes.
    let header = member_header("k.JPG", 0).unwrap();
    for (name, compression) in [("s.tar.gz", GZ), ("s.tar.zst", ZSTD)] {
        let (out, bytes) = crate::format::ShardOut::memory();
        let mut writer = compression.unwrap().writer(out).unwrap();
        for _ in 0..40_000 {
            writer.write_all(header.as_bytes()).unwrap();
        }
        writer.write_all(&[0; 1024]).unwrap();
        writer.finish().unwrap();
        let bomb = bytes.lock().unwrap().clone();
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let i = inspect_in(name, &bomb, 1 << 20);
        assert_eq!(i.findings.len(), MAX_FINDINGS + 1);
        let last = i.findings.last().unwrap();
        assert!(last.is_error(), "duplicate fields are errors");
        assert!(
            last.message
                .contains("more finding(s) in this shard are not listed"),
            "{}",
            last.message
        );
        assert_eq!(i.samples, Some(1));
    }
}

#[test]
fn hostile_gzip_headers_are_findings() {
    // A file name that never ends.
    let mut endless = vec![0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 255];
    endless.resize(MAX_GZ_HEADER + 10, b'a');
    let i = inspect_in("s.tar.gz", &endless, 4096);
    assert_eq!(
        found(&i)[0],
        (FindingKind::DecompressionFailed, Severity::Error, Some(0))
    );
    // Another compression method.
    let i = inspect_in("s.tar.gz", &[0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 255, 1, 2], 3);
    assert_eq!(
        found(&i)[0],
        (FindingKind::DecompressionFailed, Severity::Error, Some(2))
    );
    // A zstd frame asking for a 2 GiB window.
    let mut big_window = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8];
    big_window.extend_from_slice(&[0; 64]);
    let i = inspect_in("s.tar.zst", &big_window, 64);
    assert_eq!(found(&i)[0].0, FindingKind::DecompressionFailed);
}
