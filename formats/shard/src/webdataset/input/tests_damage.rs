//! Tests of damaged shards: every kind of damage is an error naming the shard and the
//! byte offset.

use super::tests::{gz, keys, open, three, tree, zst};
use super::*;
use crate::sample::SampleSource;
use shardsmith_manifest::Classify;

fn error_of(files: &[(&str, &[u8])]) -> String {
    let (_dir, source) = tree(files);
    let shards = TarShards::open(source, "in", None, None).unwrap();
    let e = shards.samples().unwrap_err();
    assert_eq!(e.kind(), "bad_input", "{e}");
    e.to_string()
}

#[test]
fn damage_is_an_error_with_its_offset() {
    let tar = three();
    let at = |s: &str| format!("input `{s}");
    let e = error_of(&[("x.tar", b"this is not a tar, just some text".as_slice())]);
    assert!(e.starts_with(&at("")), "{e}");
    assert!(e.ends_with("x.tar` is not a tar archive: it ends after 33 bytes, inside the first 512-byte tar header (offset 0)"), "{e}");
    let e = error_of(&[("x.tar", &[b'x'; 2000][..])]);
    assert!(e.ends_with("x.tar` is not a tar archive: its first 512 bytes are not a tar header (bad header checksum at offset 0)"), "{e}");
    // Cut inside the first header.
    let e = error_of(&[("x.tar", &tar[..100])]);
    assert!(e.ends_with("is not a tar archive: it ends after 100 bytes, inside the first 512-byte tar header (offset 0)"), "{e}");
    // Cut inside k0.txt's data (header 0..512, data 512..1212).
    let e = error_of(&[("x.tar", &tar[..1000])]);
    assert!(e.ends_with("is truncated: member `k0.txt` has 700 bytes of data from offset 512, but the file ends at offset 1000"), "{e}");
    // Cut inside k2.txt (headers at 0, 1536, 2560, 3584; its data at 4096).
    let e = error_of(&[("x.tar", &tar[..4200])]);
    assert!(e.ends_with("member `k2.txt` has 1000 bytes of data from offset 4096, but the file ends at offset 4200"), "{e}");
    // Cut inside a later header.
    let e = error_of(&[("x.tar", &tar[..2600])]);
    assert!(
        e.ends_with("the tar header at offset 2560 ends after 40 of 512 bytes"),
        "{e}"
    );
    // A bad checksum in the middle.
    let mut bad = tar.clone();
    bad[2560 + 10] ^= 0x20;
    let e = error_of(&[("x.tar", &bad)]);
    assert!(
        e.ends_with("is corrupt: bad tar header checksum at offset 2560"),
        "{e}"
    );
    // Cut at a member boundary, no end blocks: tolerated as every reader does.
    let (_dir, source) = tree(&[("x.tar", &tar[..3584])]);
    let listing = open(&source, None).samples().unwrap();
    assert_eq!(keys(&listing.samples), ["k0", "k1"]);
    // The same damage inside a gzip stream, and a gzip stream cut short.
    let e = error_of(&[("x.tar.gz", &gz(&tar[..1000]))]);
    assert!(e.contains("is truncated: member `k0.txt` has 700 bytes of data from offset 512, but the file ends at offset 1000"), "{e}");
    let packed = gz(&tar);
    let e = error_of(&[("x.tgz", &packed[..packed.len() / 2])]);
    assert!(
        e.contains("x.tgz` cannot be read: the gzip stream is corrupt or truncated"),
        "{e}"
    );
    let mut flipped = packed.clone();
    let n = flipped.len();
    flipped[n - 6] ^= 0xff; // the CRC-32
    let e = error_of(&[("x.tgz", &flipped)]);
    assert!(e.contains("the gzip stream is corrupt or truncated"), "{e}");
    let e = error_of(&[("x.tar", b"")]);
    assert!(
        e.ends_with("x.tar` is empty (0 bytes), not a tar archive"),
        "{e}"
    );
}

#[test]
fn oversized_metadata_is_refused_before_it_is_read() {
    let mut h = tar::Header::new_gnu();
    h.set_path("././@LongLink").unwrap();
    h.set_entry_type(tar::EntryType::GNULongName);
    h.set_size(1 << 40);
    h.set_cksum();
    let e = error_of(&[("x.tar", h.as_bytes())]);
    assert!(e.contains("has a GNU long name of 1099511627776 bytes (more than 1048576 accepted) (tar header at offset 0)"), "{e}");
}

#[test]
fn compressed_streams_cut_or_padded() {
    let tar = three();
    let packed = zst(&tar);
    let e = error_of(&[("x.tar.zst", &packed[..packed.len() - 20])]);
    assert!(
        e.contains("x.tar.zst` cannot be read: the zstd stream is corrupt or truncated"),
        "{e}"
    );
    // Zero padding after a gzip member (tape blocking) is ignored, as Python does.
    let mut padded = gz(&tar);
    padded.resize(padded.len() + 4000, 0);
    let (_dir, source) = tree(&[("x.tar.gz", &padded)]);
    let listing = open(&source, None).samples().unwrap();
    assert_eq!(keys(&listing.samples), ["k0", "k1", "k2"]);
}
