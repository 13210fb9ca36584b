//! GNU tar's sparse members and PAX records in the input: read as `tarfile` reads them
//! (holes expanded, NUL-ending values accepted), by the parsers `verify` uses.

use super::tests::{gz, keys, open, read_all, tree};
use crate::content::Validation;
use crate::sample::Loaded;
use crate::sample::SampleSource;
use crate::webdataset::ustar::testing::{
    end, file, gnu_sparse, pax, pax_sparse, pax01_sparse, record, sparse_content,
};
use shardsmith_manifest::Classify;

const MAP: [(u64, u64); 7] = [
    (100, 10),
    (300, 20),
    (600, 5),
    (900, 1),
    (1200, 50),
    (2000, 7),
    (3000, 0),
];

fn shard(sparse: Vec<u8>) -> Vec<u8> {
    [
        sparse,
        file("000.json", b"{}"),
        file("001.json", b"{\"b\":2}"),
        file("001.txt", b"after"),
        end(),
    ]
    .concat()
}

#[test]
fn sparse_members_read_whole_in_every_layout_and_container() {
    let (whole, _) = sparse_content(3000, &MAP);
    let scratch = tempfile::tempdir().unwrap();
    for (what, member) in [
        ("gnu", gnu_sparse("000.bin", 3000, &MAP)),
        ("pax 1.0", pax_sparse("000.bin", 3000, &MAP)),
        ("pax 0.1", pax01_sparse("000.bin", 3000, &MAP)),
    ] {
        let tar = shard(member);
        for (name, bytes, spill) in [
            ("s.tar", tar.clone(), None),
            ("s.tar.gz", gz(&tar), None),
            ("s.tar.gz", gz(&tar), Some(scratch.path())),
        ] {
            let (_dir, source) = tree(&[(name, &bytes)]);
            let shards = open(&source, spill);
            let listing = shards.samples().unwrap();
            assert!(listing.skipped.is_empty(), "{what}: {:?}", listing.skipped);
            assert_eq!(keys(&listing.samples), ["000", "001"], "{what}");
            assert_eq!(listing.samples[0].fields[0].size, 3000);
            let read = read_all(&shards, &listing.samples, &[1, 0]);
            assert_eq!(read[0].1[1].1, b"after", "{what}");
            assert_eq!(
                read[1].1[0],
                ("bin".to_string(), whole.clone()),
                "{what} {name}"
            );
        }
    }
}

#[test]
fn large_sparse_files_stream_and_holes_are_not_expanded_in_memory_without_a_copy() {
    let size = 40 << 20;
    let map = [(5, 3), (20 << 20, 4), (size - 1, 1)];
    let tar = shard(gnu_sparse("000.bin", size, &map));
    let (whole, _) = sparse_content(size, &map);
    // In place (and from a decompressed copy): streamed, expanded on the way.
    let scratch = tempfile::tempdir().unwrap();
    for (name, bytes, spill) in [
        ("s.tar", tar.clone(), None),
        ("s.tar.gz", gz(&tar), Some(scratch.path())),
    ] {
        let (_dir, source) = tree(&[(name, &bytes)]);
        let shards = open(&source, spill);
        let listing = shards.samples().unwrap();
        let mut reader = shards.reader(&listing.samples, Validation::Cheap).unwrap();
        let mut buf = Vec::new();
        let Loaded::Streams(mut streams) = reader.load(0, &mut buf).unwrap().unwrap() else {
            panic!("a large sample is streamed");
        };
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut streams[0], &mut read).unwrap();
        assert!(read == whole, "{name}");
    }
    // A compressed shard without a copy reads samples into memory: 40 MiB of holes
    // from 8 stored bytes are refused by name, not allocated.
    let (_dir, source) = tree(&[("s.tar.gz", &gz(&tar))]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    let mut reader = shards.reader(&listing.samples, Validation::Cheap).unwrap();
    let Err(e) = reader.load(0, &mut Vec::new()) else {
        panic!("holes are not expanded in memory");
    };
    let e = e.to_string();
    assert!(
        e.contains("000.bin` is a GNU sparse file of 41943040 bytes of which 8 are stored"),
        "{e}"
    );
}

#[test]
fn xattr_values_ending_in_nul_are_read() {
    let tar = [
        pax(
            "000.jpg",
            &[
                record("mtime", b"1795722703.426476045"),
                record("SCHILY.xattr.user.mime", b"image/jpeg\0"),
            ],
        ),
        file("000.jpg", b"jpeg"),
        file("000.json", b"{}"),
        end(),
    ]
    .concat();
    let (_dir, source) = tree(&[("s.tar", &tar)]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    assert_eq!(keys(&listing.samples), ["000"]);
    let read = read_all(&shards, &listing.samples, &[0]);
    assert_eq!(read[0].1[0], ("jpg".to_string(), b"jpeg".to_vec()));
}

fn error_of(tar: &[u8]) -> String {
    let (_dir, source) = tree(&[("s.tar", tar)]);
    let e = open(&source, None).samples().unwrap_err();
    assert_eq!(e.kind(), "bad_input", "{e}");
    e.to_string()
}

#[test]
fn malformed_records_and_maps_are_errors_naming_them() {
    let mut bad = record("SCHILY.xattr.user.mime", b"image/jpeg\0");
    bad.pop();
    let e = error_of(&[pax("000.jpg", &[bad]), file("000.jpg", b"x"), end()].concat());
    assert!(
        e.contains("is corrupt: the PAX extended header at offset 0: its record at byte 0"),
        "{e}"
    );
    let e = error_of(&shard(gnu_sparse("000.bin", 3000, &[(100, 10), (105, 1)])));
    assert!(
        e.contains("is corrupt: sparse member `000.bin` (tar header at offset 0): its sparse map puts a segment at byte 105"),
        "{e}"
    );
    let e = error_of(&shard(pax_sparse("000.bin", 100, &[(90, 20)])));
    assert!(e.contains("past the file's 100 bytes"), "{e}");
    // Cut inside the extended sparse headers.
    let tar = gnu_sparse("000.bin", 3000, &MAP);
    let e = error_of(&tar[..700]);
    assert!(
        e.contains("is truncated: the extended sparse header of member `000.bin` at offset 512 ends after 188 of 512 bytes"),
        "{e}"
    );
}

#[test]
fn a_map_too_large_to_keep_leaves_its_sample_out_by_name() {
    let segments = MAX_SEGMENTS_FOR_TEST + 1;
    let map: Vec<(u64, u64)> = (0..segments).map(|i| (i * 2, 1)).collect();
    let tar = shard(pax_sparse("000.bin", segments * 2, &map));
    let (_dir, source) = tree(&[("s.tar", &tar)]);
    let listing = open(&source, None).samples().unwrap();
    assert_eq!(keys(&listing.samples), ["001"]);
    let paths: Vec<&str> = listing.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["s.tar/000.bin", "s.tar/000.json"]);
    assert!(
        listing.skipped[0]
            .reason
            .contains("more than 262144 data segments, more than shardsmith reads"),
        "{}",
        listing.skipped[0].reason
    );
}

const MAX_SEGMENTS_FOR_TEST: u64 = crate::webdataset::ustar::sparse::MAX_SEGMENTS;
