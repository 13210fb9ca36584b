//! GNU tar's sparse members and PAX records (built as GNU tar writes them).

use super::tests::{found, inspect};
use super::*;
use crate::webdataset::ustar::testing::{
    end, file, gnu_sparse, header, pax, pax_sparse, pax01_sparse, record,
};

/// Six segments and GNU tar's closing entry: four in the header, three in an extended
/// sparse header.
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
        file("001.json", b"{}"),
        file("001.txt", b"hi"),
        end(),
    ]
    .concat()
}

fn messages(i: &Inspection) -> Vec<String> {
    i.findings.iter().map(|f| f.message.clone()).collect()
}

#[test]
fn sparse_members_are_read_whole_and_only_wids_is_warned_about() {
    for (bytes, what, at) in [
        (
            gnu_sparse("000.bin", 3000, &MAP),
            "old GNU format, type `S`",
            0,
        ),
        (pax_sparse("000.bin", 3000, &MAP), "PAX format 1.0", 1024),
        (pax01_sparse("000.bin", 3000, &MAP), "PAX format 0.1", 1024),
    ] {
        let i = inspect(&shard(bytes));
        assert_eq!(
            found(&i),
            vec![(FindingKind::NonRegularMember, Some(at))],
            "{what}"
        );
        let f = &i.findings[0];
        assert_eq!(f.severity, shardsmith_manifest::Severity::Warning);
        assert!(f.message.contains(what), "{}", f.message);
        assert!(
            f.message.contains("3000 bytes, ")
                && f.message.contains("tarfile and webdataset read it whole"),
            "{}",
            f.message
        );
        assert_eq!(i.samples, Some(2), "{what}: nothing after it is lost");
        assert_eq!(i.first_key.as_deref(), Some("000"));
        assert_eq!(i.last_key.as_deref(), Some("001"));
    }
}

#[test]
fn inconsistent_maps_are_errors_and_the_walk_goes_on() {
    for (map, size, words) in [
        (
            &[(100, 10), (105, 10)][..],
            3000,
            "before the end of the one before it",
        ),
        (
            &[(100, 10), (2995, 10)][..],
            3000,
            "past the file's 3000 bytes",
        ),
        (
            &[(100, 10), (500, 0), (200, 10)][..],
            3000,
            "before the end",
        ),
    ] {
        for bytes in [
            gnu_sparse("000.bin", size, map),
            pax_sparse("000.bin", size, map),
        ] {
            let i = inspect(&shard(bytes));
            let errors: Vec<&str> = i
                .findings
                .iter()
                .filter(|f| f.is_error())
                .map(|f| f.message.as_str())
                .collect();
            assert_eq!(errors.len(), 1, "{:?}", messages(&i));
            assert!(errors[0].contains(words), "{}", errors[0]);
            assert_eq!(i.samples, Some(2));
        }
    }
    // The map holds fewer bytes than are stored.
    let mut bytes = gnu_sparse("000.bin", 3000, &[(100, 10)]);
    bytes[..512].copy_from_slice(&header(b"000.bin", 20, b'S', true, |h| {
        h[386..410].copy_from_slice(b"00000000144\x0000000000012\0");
        h[483..495].copy_from_slice(b"00000005670\0");
    }));
    let i = inspect(&shard(bytes));
    assert!(
        messages(&i)
            .iter()
            .any(|m| m.contains("hold 10 bytes but 20 are stored")),
        "{:?}",
        messages(&i)
    );
}

#[test]
fn a_map_cut_short_is_a_truncation() {
    let bytes = gnu_sparse("000.bin", 3000, &MAP);
    let i = inspect(&bytes[..700]);
    assert_eq!(
        found(&i),
        vec![
            (FindingKind::NonRegularMember, Some(0)),
            (FindingKind::Truncated, Some(512))
        ]
    );
    assert!(
        i.findings[1]
            .message
            .contains("sparse map of member `000.bin`")
    );
    let bytes = pax_sparse("000.bin", 3000, &MAP);
    let i = inspect(&bytes[..1536 + 100]);
    assert_eq!(i.findings[1].kind, FindingKind::Truncated);
}

#[test]
fn a_format_1_map_past_its_member_is_an_error() {
    // A 1.0 member whose size field counts less than its map text.
    let mut bytes = pax_sparse("000.bin", 3000, &MAP);
    let at = 1024;
    bytes[at..at + 512].copy_from_slice(&header(
        b"./GNUSparseFile.0/000.bin",
        0,
        b'0',
        false,
        |_| {},
    ));
    let i = inspect(&shard(bytes));
    assert!(
        messages(&i)
            .iter()
            .any(|m| m.contains("runs past the 0 bytes stored")),
        "{:?}",
        messages(&i)
    );
}

#[test]
fn xattr_values_ending_in_nul_are_fine_and_malformed_records_are_not() {
    // GNU tar --xattrs --format=pax on SELinux systems.
    let records = [
        record("mtime", b"1795722703.426476045"),
        record(
            "SCHILY.xattr.security.selinux",
            b"unconfined_u:object_r:user_home_t:s0\0",
        ),
        record("SCHILY.xattr.user.mime", b"image/jpeg\0"),
    ];
    let bytes = [
        pax("000.jpg", &records),
        file("000.jpg", b"jpg"),
        file("000.json", b"{}"),
        end(),
    ]
    .concat();
    let i = inspect(&bytes);
    assert_eq!(found(&i), vec![]);
    assert_eq!(i.samples, Some(1));
    // A record whose length is one short.
    let mut bad = records[1].clone();
    bad.pop();
    let bytes = [pax("000.jpg", &[bad]), file("000.jpg", b"jpg"), end()].concat();
    let i = inspect(&bytes);
    assert_eq!(found(&i), vec![(FindingKind::BadHeader, Some(0))]);
    assert!(
        i.findings[0].message.contains("record at byte 0"),
        "{:?}",
        messages(&i)
    );
}
