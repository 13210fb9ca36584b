//! The wraps read back, and damaged ones refused with the frame or item named, never a
//! panic.

use serde_json::json;

use super::{Compression, Wrap, WrapError, inflate_file, unframe, unsample};
use crate::litdata::chunk;

/// A plain chunk of `n` items of a few bytes each.
fn plain(n: usize) -> Vec<u8> {
    let items: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut item = (3u32 + i as u32 % 4).to_le_bytes().to_vec();
            item.extend(std::iter::repeat_n(b'a' + i as u8, 3 + i % 4));
            item
        })
        .collect();
    let mut out = chunk::header(items.iter().map(|i| i.len() as u64));
    for item in items {
        out.extend(item);
    }
    out
}

fn word(data: &[u8], at: usize) -> usize {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize
}

/// `framed_zstd.pack_framed_zstd`: `k` items per frame.
fn framed(plain: &[u8], k: usize) -> Vec<u8> {
    let n = word(plain, 0);
    let offsets: Vec<usize> = (0..=n).map(|i| word(plain, 4 + 4 * i)).collect();
    let frames = n.div_ceil(k);
    let mut out = b"LDFZ01\0\0".to_vec();
    out.extend(1u16.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    for v in [n, k, frames] {
        out.extend((v as u32).to_le_bytes());
    }
    for o in &offsets {
        out.extend(((o - offsets[0]) as u32).to_le_bytes());
    }
    let mut cursor = out.len() + 24 * frames;
    let mut payload = Vec::new();
    for f in 0..frames {
        let (start, end) = (f * k, (f * k + k).min(n));
        let raw = &plain[offsets[start]..offsets[end]];
        let packed = zstd::encode_all(raw, 3).unwrap();
        out.extend((start as u32).to_le_bytes());
        out.extend(((end - start) as u32).to_le_bytes());
        out.extend((cursor as u64).to_le_bytes());
        out.extend((packed.len() as u32).to_le_bytes());
        out.extend((raw.len() as u32).to_le_bytes());
        cursor += packed.len();
        payload.extend(packed);
    }
    out.extend(payload);
    out
}

/// `framed_zstd.pack_sample_zstd`.
fn sampled(plain: &[u8]) -> Vec<u8> {
    let n = word(plain, 0);
    let offsets: Vec<usize> = (0..=n).map(|i| word(plain, 4 + 4 * i)).collect();
    let items: Vec<Vec<u8>> = (0..n)
        .map(|i| zstd::encode_all(&plain[offsets[i]..offsets[i + 1]], 3).unwrap())
        .collect();
    let mut out = chunk::header(items.iter().map(|i| i.len() as u64));
    for item in items {
        out.extend(item);
    }
    out
}

/// The offset of frame `f`'s entry in a framed chunk of `n` items.
fn entry(n: usize, f: usize) -> usize {
    24 + 4 * (n + 1) + 24 * f
}

fn error(result: Result<Vec<u8>, WrapError>) -> String {
    result.expect_err("refused").to_string()
}

#[test]
fn every_wrap_gives_the_plain_chunk_back() {
    let chunk = plain(7);
    for k in [1, 3, 7, 256] {
        assert_eq!(unframe(&framed(&chunk, k)).unwrap(), chunk, "k {k}");
    }
    assert_eq!(unsample(&sampled(&chunk)).unwrap(), chunk);
    let whole = zstd::encode_all(&chunk[..], 3).unwrap();
    assert_eq!(inflate_file(&whole[..]).unwrap(), chunk);
}

#[test]
fn damaged_frames_are_named_and_nothing_panics() {
    let chunk = plain(7);
    let file = framed(&chunk, 3);
    // Cut anywhere: an error, never a panic.
    for cut in 0..file.len() {
        assert!(unframe(&file[..cut]).is_err(), "cut at {cut}");
    }
    assert!(error(unframe(&file[..30])).contains("ends inside its framed zstd header"));
    // A flipped byte in frame 1's zstd bytes.
    let at = u64::from_le_bytes(file[entry(7, 1) + 8..entry(7, 1) + 16].try_into().unwrap());
    let mut flipped = file.clone();
    flipped[at as usize + 6] ^= 0x55;
    let reason = error(unframe(&flipped));
    assert!(reason.contains("frame 1 (items 3..6)"), "{reason}");
    // A frame entry pointing outside the file.
    let mut outside = file.clone();
    outside[entry(7, 2) + 8..entry(7, 2) + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let past = unframe(&outside).unwrap_err();
    assert!(past.is_truncated(), "{past}");
    assert!(
        past.to_string()
            .contains("frame 2 (items 6..7) ends at 1099511627"),
        "{past}"
    );
    outside[entry(7, 2) + 8..entry(7, 2) + 16].copy_from_slice(&3u64.to_le_bytes());
    assert!(error(unframe(&outside)).contains("frame 2 (items 6..7) lies at 3.."));
    // An uncompressed length its offsets disagree with.
    let mut size = file.clone();
    size[entry(7, 0) + 20] ^= 1;
    assert!(error(unframe(&size)).contains("frame 0 (items 0..3) says it inflates to"));
    // Frames that skip items, or do not cover them all.
    let mut skip = file.clone();
    skip[entry(7, 1)] = 4;
    assert!(error(unframe(&skip)).contains("does not follow"));
    let mut short = file.clone();
    short[20] = 2;
    assert!(error(unframe(&short)).contains("hold 6 items, its header says 7"));
    // Another version, no items, no magic.
    let mut version = file.clone();
    version[8] = 2;
    assert!(error(unframe(&version)).contains("version 2"));
    let mut empty = file.clone();
    empty[12..16].copy_from_slice(&[0; 4]);
    assert!(error(unframe(&empty)).contains("0 items"));
    assert!(matches!(unframe(&chunk), Err(WrapError::NoMagic)));
}

#[test]
fn huge_counts_in_a_small_file_are_refused_before_allocating() {
    let mut file = framed(&plain(2), 2);
    file[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = unframe(&file).unwrap_err();
    assert!(e.is_truncated(), "{e}");
    let mut frames = framed(&plain(2), 2);
    frames[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(unframe(&frames).unwrap_err().is_truncated());
    // A sample chunk whose header claims many items.
    let mut sample = sampled(&plain(2));
    sample[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(unsample(&sample).unwrap_err().is_truncated());
}

#[test]
fn damaged_samples_and_whole_files_are_named() {
    let chunk = plain(5);
    let file = sampled(&chunk);
    for cut in 0..file.len() {
        assert!(unsample(&file[..cut]).is_err(), "cut at {cut}");
    }
    let third = word(&file, 4 + 4 * 2);
    let mut flipped = file.clone();
    flipped[third + 1] ^= 0x55;
    assert!(error(unsample(&flipped)).contains("item 2 is no readable zstd"));
    let whole = zstd::encode_all(&chunk[..], 3).unwrap();
    for cut in [0, 5, whole.len() - 1] {
        assert!(
            inflate_file(&whole[..cut]).is_err() || cut == 0,
            "cut at {cut}"
        );
    }
    let cut = inflate_file(&whole[..whole.len() - 1]).unwrap_err();
    assert!(cut.is_truncated(), "{cut}");
    assert!(
        cut.to_string()
            .contains("its zstd stream is no readable zstd"),
        "{cut}"
    );
}

#[test]
fn the_config_says_the_wrap() {
    let of = |config: serde_json::Value| Compression::of_config(&config);
    assert_eq!(of(json!({})).unwrap().wrap, Wrap::None);
    let chunk = of(json!({"compression": "zstd:9", "compression_level": null})).unwrap();
    assert_eq!(chunk.wrap, Wrap::Chunk);
    assert_eq!(chunk.wrap_of("a/chunk-0-1.zstd:9.bin"), Wrap::Chunk);
    assert_eq!(chunk.wrap_of("chunk-0-1.bin"), Wrap::None);
    let batch = of(json!({"compression": "zstd", "compression_level": "batch"})).unwrap();
    assert_eq!(batch.wrap_of("chunk-0-1.bin"), Wrap::Batch);
    assert_eq!(
        of(json!({"compression": "zstd", "compression_level": "sample"}))
            .unwrap()
            .wrap,
        Wrap::Sample
    );
    assert!(
        of(json!({"compression": "gzip"}))
            .unwrap_err()
            .contains("gzip")
    );
    assert!(
        of(json!({"compression": "zstd", "compression_level": 4}))
            .unwrap_err()
            .contains("compression_level")
    );
}
