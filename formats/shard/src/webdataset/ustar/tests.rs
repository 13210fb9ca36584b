use std::io::Read;
use std::sync::Arc;

use super::pax::{PaxError, PaxInfo, PaxSparse, records};
use super::sparse::{Expand, MapCheck, MapText, SparseError, old_gnu, old_gnu_extension};
use super::testing::record;
use super::*;

#[test]
fn pax_values_keep_nul_and_newline_bytes() {
    // GNU tar --xattrs on SELinux systems: the value ends in NUL.
    let data = [
        record("mtime", b"1795722703.4"),
        record(
            "SCHILY.xattr.security.selinux",
            b"system_u:object_r:user_home_t:s0\0",
        ),
        record("SCHILY.xattr.user.two", b"a\nb\0"),
        record("path", b"000.jpg"),
    ]
    .concat();
    let parsed = records(&data).unwrap();
    assert_eq!(parsed.len(), 4);
    assert_eq!(parsed[1].value, b"system_u:object_r:user_home_t:s0\0");
    assert_eq!(parsed[2].value, b"a\nb\0");
    assert_eq!(
        PaxInfo::parse(&data).unwrap().name.as_deref(),
        Some(&b"000.jpg"[..])
    );
    // NUL padding after the records ends them.
    let mut padded = data.clone();
    padded.extend([0; 100]);
    assert_eq!(records(&padded).unwrap(), parsed);
}

#[test]
fn malformed_records_are_errors_with_their_offset() {
    let good = record("a", b"1");
    for (bad, at) in [
        (b"x".to_vec(), 0),
        (b"5 a=1".to_vec(), 0),    // no newline, length past the data
        (b"6 a=12\n".to_vec(), 0), // length one short: last byte is not \n
        (b"4 =\n".to_vec(), 0),    // shorter than the shortest record
        (b"5 =1\n".to_vec(), 0),   // empty keyword
        (b"6 abc\n".to_vec(), 0),  // no `=`
        (b"006 a=\n".to_vec(), 0), // a record of 7 bytes says 6
        ([good.clone(), b"9 a".to_vec()].concat(), good.len()),
        (b"99999999999999999999999 a=1\n".to_vec(), 0),
    ] {
        assert_eq!(records(&bad), Err(PaxError::Malformed { at }), "{bad:?}");
    }
    assert!(matches!(
        PaxInfo::parse(&record("size", b"12x")),
        Err(PaxError::NotANumber { .. })
    ));
}

#[test]
fn fields_apply_as_tarfile_applies_them() {
    // A keyword keeps its first place and its last value; path loses trailing slashes.
    let data = [
        record("path", b"a.jpg"),
        record("GNU.sparse.name", b"b.jpg"),
        record("path", b"c.jpg//"),
        record("size", b"9"),
    ]
    .concat();
    let info = PaxInfo::parse(&data).unwrap();
    assert_eq!(info.name.as_deref(), Some(&b"b.jpg"[..]));
    assert_eq!((info.stored, info.size), (Some(9), Some(9)));
    // The earlier of two headers wins.
    let first = PaxInfo::parse(&record("path", b"first.txt")).unwrap();
    let second = PaxInfo::parse(&[record("path", b"second.txt"), record("size", b"3")].concat());
    let both = first.then(second.unwrap());
    assert_eq!(both.name.as_deref(), Some(&b"first.txt"[..]));
    assert_eq!(both.stored, Some(3));
}

#[test]
fn sparse_records_of_each_version() {
    let v00 = [
        record("GNU.sparse.size", b"100"),
        record("GNU.sparse.numblocks", b"2"),
        record("GNU.sparse.offset", b"10"),
        record("GNU.sparse.numbytes", b"5"),
        record("GNU.sparse.offset", b"50"),
        record("GNU.sparse.numbytes", b"7"),
    ]
    .concat();
    let info = PaxInfo::parse(&v00).unwrap();
    assert_eq!(info.size, Some(100));
    assert_eq!(
        info.sparse,
        Some(PaxSparse::Records {
            version: "0.0",
            map: vec![(10, 5), (50, 7)]
        })
    );
    let v01 = [
        record("GNU.sparse.size", b"100"),
        record("GNU.sparse.name", b"k.bin"),
        record("GNU.sparse.map", b"10,5,50,7,100"),
    ]
    .concat();
    let info = PaxInfo::parse(&v01).unwrap();
    assert_eq!(info.name.as_deref(), Some(&b"k.bin"[..]));
    assert_eq!(
        info.sparse,
        Some(PaxSparse::Records {
            version: "0.1",
            map: vec![(10, 5), (50, 7)]
        })
    );
    assert!(PaxInfo::parse(&record("GNU.sparse.map", b"1,x")).is_err());
    let v10 = [
        record("GNU.sparse.major", b"1"),
        record("GNU.sparse.minor", b"0"),
        record("GNU.sparse.realsize", b"100"),
    ]
    .concat();
    let info = PaxInfo::parse(&v10).unwrap();
    assert_eq!(
        (info.size, info.sparse),
        (Some(100), Some(PaxSparse::InData))
    );
}

#[test]
fn maps_are_checked_as_tarfile_expands_them() {
    let mut c = MapCheck::new(100);
    assert_eq!(c.push(0, 0), Ok(false));
    assert_eq!(c.push(10, 5), Ok(true));
    assert_eq!(
        c.push(0, 0),
        Ok(false),
        "an empty entry before the next is harmless"
    );
    assert_eq!(c.push(15, 5), Ok(true), "adjacent segments");
    assert_eq!(c.push(100, 0), Ok(false), "GNU tar's closing entry");
    assert_eq!(c.finish(10), Ok(()));
    assert_eq!(
        c.finish(11),
        Err(SparseError::Stored {
            mapped: 10,
            stored: 11
        })
    );
    let mut c = MapCheck::new(100);
    c.push(10, 10).unwrap();
    assert_eq!(
        c.push(15, 1),
        Err(SparseError::Unordered {
            offset: 15,
            end: 20
        })
    );
    // An empty entry beyond the next segment's start makes a hole over it.
    let mut c = MapCheck::new(100);
    c.push(10, 10).unwrap();
    c.push(60, 0).unwrap();
    assert_eq!(
        c.push(30, 1),
        Err(SparseError::Unordered {
            offset: 30,
            end: 60
        })
    );
    let mut c = MapCheck::new(100);
    assert!(matches!(c.push(95, 6), Err(SparseError::PastEnd { .. })));
    assert!(matches!(
        c.push(u64::MAX, 2),
        Err(SparseError::PastEnd { .. })
    ));
}

/// Feeds `text` to a [`MapText`] in blocks (NUL-padded); the segments and the blocks
/// read, or the error.
fn read_map(text: &[u8]) -> Result<(Vec<(u64, u64)>, u64), SparseError> {
    let mut padded = text.to_vec();
    padded.resize(padded.len().div_ceil(512).max(1) * 512, 0);
    let mut map = MapText::new();
    let mut got = Vec::new();
    for block in padded.chunks(512) {
        let done = map.block(block, |o, n| {
            got.push((o, n));
            Ok(())
        })?;
        if done {
            return Ok((got, map.consumed()));
        }
    }
    panic!("map text not done after {} bytes", padded.len());
}

#[test]
fn map_text_is_read_a_block_at_a_time() {
    assert_eq!(
        read_map(b"2\n10\n5\n50\n7\n"),
        Ok((vec![(10, 5), (50, 7)], 512))
    );
    assert_eq!(read_map(b"0\n"), Ok((vec![], 512)));
    // 200 segments: lines cross block boundaries; the data starts after the block
    // holding the last number.
    let mut text = b"200\n".to_vec();
    let want: Vec<(u64, u64)> = (0..200).map(|i| (i * 1000, 1 + i % 7)).collect();
    for (o, n) in &want {
        text.extend(format!("{o}\n{n}\n").into_bytes());
    }
    let blocks = text.len().div_ceil(512) as u64;
    assert_eq!(read_map(&text), Ok((want, blocks * 512)));
    // Damage: a stray byte, a number over 20 digits, NUL inside the map, no count
    // line in the first block.
    assert_eq!(read_map(b"1\n1x\n2\n"), Err(SparseError::Text { at: 3 }));
    let long = format!("1\n{}\n1\n", "0".repeat(21));
    assert_eq!(read_map(long.as_bytes()), Err(SparseError::Text { at: 22 }));
    let big = format!("1\n{}\n1\n", "9".repeat(20));
    assert_eq!(
        read_map(big.as_bytes()),
        Err(SparseError::Text { at: 21 }),
        "over u64"
    );
    assert_eq!(read_map(b"2\n1\n2\n"), Err(SparseError::Text { at: 6 }));
    assert_eq!(read_map(&[b'1'; 600]), Err(SparseError::Text { at: 20 }));
    let mut late = vec![b'\n'; 511];
    late.extend(b"1\n");
    assert_eq!(read_map(&late), Err(SparseError::Text { at: 0 }));
}

#[test]
fn expansion_fills_holes_with_zeros() {
    let stored = b"abcdefg";
    let map: Arc<[(u64, u64)]> = vec![(2, 3), (8, 4)].into();
    for piece in [1, 3, 100] {
        let mut e = Expand::new(&stored[..], map.clone(), 15);
        let mut out = Vec::new();
        let mut buf = vec![0u8; piece];
        loop {
            let n = e.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, b"\0\0abc\0\0\0defg\0\0\0", "reads of {piece}");
    }
    // Stored data shorter than the map says: an error, never zeros.
    let mut e = Expand::new(&stored[..5], map, 15);
    assert!(e.read_to_end(&mut Vec::new()).is_err());
}

#[test]
fn old_gnu_headers_and_extensions() {
    let mut h = [0u8; 512];
    h[156] = b'S';
    h[386..386 + 24].copy_from_slice(b"00000000012\x0000000000005\0");
    h[386 + 24..386 + 48].copy_from_slice(b"00000000100\x0000000000007\0");
    h[482] = 1;
    h[483..495].copy_from_slice(b"00000000200\0");
    let gnu = old_gnu(&h);
    // Empty slots read as (0, 0), as tarfile reads them.
    assert_eq!(gnu.entries, vec![(10, 5), (64, 7), (0, 0), (0, 0)]);
    assert!(gnu.extended);
    assert_eq!(gnu.size, Some(128));
    let mut ext = [0u8; 512];
    ext[..24].copy_from_slice(b"00000000300\x0000000000001\0");
    ext[24..48].copy_from_slice(b"00000000000\x0000000000001\0");
    ext[48..72].copy_from_slice(b"00000000400\x0000000000000\0");
    ext[72..96].copy_from_slice(b"00000000500\x0000000000002\0");
    // Zero offsets or lengths are dropped (tarfile), a non-number ends the block.
    assert_eq!(old_gnu_extension(&ext), (vec![(192, 1), (320, 2)], false));
    ext[96..99].copy_from_slice(b"zz ");
    ext[120..144].copy_from_slice(b"00000000600\x0000000000002\0");
    ext[504] = 1;
    assert_eq!(old_gnu_extension(&ext), (vec![(192, 1), (320, 2)], true));
}

#[test]
fn layouts_of_plain_and_sparse_members() {
    let mut h = [0u8; 512];
    h[156] = b'0';
    let plain = layout(&h, 9, PaxInfo::default()).unwrap();
    assert_eq!((plain.stored, plain.size, plain.map), (9, 9, None));
    let sized = PaxInfo::parse(&record("size", b"20")).unwrap();
    assert_eq!(layout(&h, 9, sized).unwrap().stored, 20);
    // A real size without a map tarfile knows: it would read past the stored bytes.
    let v11 = [
        record("GNU.sparse.major", b"1"),
        record("GNU.sparse.minor", b"1"),
        record("GNU.sparse.realsize", b"100"),
    ]
    .concat();
    assert_eq!(
        layout(&h, 9, PaxInfo::parse(&v11).unwrap()),
        Err(SparseError::NoMap {
            size: 100,
            stored: 9
        })
    );
    let v10 = [
        record("GNU.sparse.major", b"1"),
        record("GNU.sparse.minor", b"0"),
        record("GNU.sparse.realsize", b"100"),
    ]
    .concat();
    let l = layout(&h, 1024, PaxInfo::parse(&v10).unwrap()).unwrap();
    assert_eq!((l.stored, l.size, l.map), (1024, 100, Some(MapFrom::Data)));
    let with_size = [v10, record("size", b"1024")].concat();
    assert_eq!(
        layout(&h, 1024, PaxInfo::parse(&with_size).unwrap()),
        Err(SparseError::SizeRecord)
    );
    h[156] = b'S';
    h[483..495].copy_from_slice(b"00000000200\0");
    let l = layout(&h, 3, PaxInfo::default()).unwrap();
    assert_eq!((l.stored, l.size, l.extension), (3, 128, false));
    assert!(matches!(l.map, Some(MapFrom::Header(_))));
    h[483..495].copy_from_slice(b"notanumber\0\0");
    assert_eq!(
        layout(&h, 3, PaxInfo::default()),
        Err(SparseError::RealSize)
    );
}

#[test]
fn numbers_as_tarfile_reads_them() {
    assert_eq!(number(b"0000644\0"), Some(0o644));
    assert_eq!(number(b"  17 \0"), Some(0o17));
    assert_eq!(number(b"\0\0\0"), Some(0));
    assert_eq!(number(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]), Some(256));
    assert_eq!(number(&[0xff; 12]), None);
    assert_eq!(number(b"9\0"), None);
}
