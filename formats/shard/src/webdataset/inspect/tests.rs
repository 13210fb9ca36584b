use super::*;
use crate::format::{Field, Payload, ShardFormat};
use crate::webdataset::{WebDataset, member_header};

/// A shard of `(key, ext, bytes)` members written by our encoder.
fn shard(members: &[(&str, &str, &[u8])]) -> Vec<u8> {
    let (mut out, bytes) = crate::format::ShardOut::memory();
    let mut enc = WebDataset::PLAIN.encoder();
    for (key, ext, data) in members {
        let mut fields = [Field {
            ext,
            size: data.len() as u64,
            payload: Payload::Bytes(data),
        }];
        enc.add(&mut out, key, &mut fields).unwrap();
    }
    enc.finish(&mut out).unwrap();
    bytes.lock().unwrap().clone()
}

fn clean() -> Vec<u8> {
    shard(&[
        ("a", "jpg", &[1u8; 700]),
        ("a", "json", b"{}"),
        ("b", "jpg", &[2u8; 512]),
        ("b", "json", b"{}"),
        ("c", "txt", b""),
    ])
}

pub(super) fn inspect_in(bytes: &[u8], piece: usize) -> Inspection {
    let mut inspector = Box::new(TarInspector::new("s.tar"));
    for chunk in bytes.chunks(piece.max(1)) {
        inspector.update(chunk);
    }
    inspector.finish()
}

pub(super) fn inspect(bytes: &[u8]) -> Inspection {
    let whole = inspect_in(bytes, bytes.len());
    for piece in [1, 7, 511, 513, 4096] {
        assert_eq!(
            inspect_in(bytes, piece),
            whole,
            "result must not depend on read sizes ({piece})"
        );
    }
    whole
}

pub(super) fn found(i: &Inspection) -> Vec<(FindingKind, Option<u64>)> {
    i.findings.iter().map(|f| (f.kind, f.offset)).collect()
}

/// A raw member header with arbitrary name bytes, type and prefix.
fn raw_header(name: &[u8], size: u64, typeflag: u8, prefix: &[u8]) -> [u8; 512] {
    let mut h = member_header("x", size).unwrap();
    let bytes = h.as_mut_bytes();
    bytes[..100].fill(0);
    bytes[..name.len()].copy_from_slice(name);
    bytes[345..345 + prefix.len()].copy_from_slice(prefix);
    bytes[156] = typeflag;
    h.set_cksum();
    *h.as_bytes()
}

fn member(name: &[u8], data: &[u8], typeflag: u8) -> Vec<u8> {
    let mut out = raw_header(name, data.len() as u64, typeflag, b"").to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

fn end() -> Vec<u8> {
    vec![0; 1024]
}

#[test]
fn clean_shard_counts_samples_and_keys() {
    let i = inspect(&clean());
    assert_eq!(found(&i), vec![]);
    assert_eq!(i.samples, Some(3));
    assert_eq!(i.first_key.as_deref(), Some("a"));
    assert_eq!(i.last_key.as_deref(), Some("c"));
}

#[test]
fn python_record_padding_is_accepted() {
    let mut bytes = clean();
    bytes.resize(bytes.len().div_ceil(10240) * 10240, 0);
    assert_eq!(found(&inspect(&bytes)), vec![]);
}

#[test]
fn truncation_is_located() {
    let bytes = clean();
    // Inside the first member's data (header at 0, data 512..1212).
    let i = inspect(&bytes[..1000]);
    assert_eq!(found(&i), vec![(FindingKind::Truncated, Some(1000))]);
    assert_eq!(i.findings[0].end, Some(1212));
    // At a member boundary: after sample a (2 members: 512+1024 + 512+512).
    assert_eq!(
        found(&inspect(&bytes[..2560])),
        vec![(FindingKind::MissingEndMarker, Some(2560))]
    );
    // Inside a header.
    assert_eq!(
        found(&inspect(&bytes[..2560 + 100])),
        vec![(FindingKind::Truncated, Some(2560))]
    );
    // Inside padding of the first member.
    assert_eq!(
        found(&inspect(&bytes[..1300])),
        vec![(FindingKind::Truncated, Some(1300))]
    );
    // Only one end block.
    let n = bytes.len();
    assert_eq!(
        found(&inspect(&bytes[..n - 512])),
        vec![(FindingKind::MissingEndMarker, Some(n as u64 - 1024))]
    );
    assert_eq!(
        found(&inspect(&[])),
        vec![(FindingKind::Truncated, Some(0))]
    );
}

#[test]
fn flipped_header_byte_is_a_bad_header_at_that_header() {
    let mut bytes = clean();
    bytes[2560 + 10] ^= 0x01;
    let i = inspect(&bytes);
    assert_eq!(found(&i), vec![(FindingKind::BadHeader, Some(2560))]);
    assert_eq!(
        i.samples,
        Some(1),
        "readers see only the samples before the damage"
    );
}

#[test]
fn zeroed_header_block_is_a_premature_end() {
    let mut bytes = clean();
    bytes[2560..2560 + 512].fill(0);
    let i = inspect(&bytes);
    assert_eq!(found(&i), vec![(FindingKind::PrematureEnd, Some(2560))]);
    assert_eq!(i.findings[0].end, Some(3072));
    // A 4 KiB zero run that swallows headers and data alike.
    let mut bytes = clean();
    bytes.extend_from_slice(&[0; 0]);
    let big = shard(&[
        ("a", "bin", &[9u8; 3000]),
        ("b", "bin", &[9u8; 3000]),
        ("c", "bin", &[9u8; 10]),
    ]);
    let mut zeroed = big.clone();
    zeroed[3072..3072 + 4096].fill(0);
    let i = inspect(&zeroed);
    // Sample a's header is intact; b's header (3584) and data are zeros; c's header at
    // 7168 shows the archive goes on.
    assert_eq!(found(&i), vec![(FindingKind::PrematureEnd, Some(3584))]);
    assert_eq!(i.findings[0].end, Some(7168));
    assert_eq!(i.samples, Some(1));
    // Zeros over member data alone leave the structure intact: only the manifest's
    // hash can see them (covered by the verify tests).
    let mut data_only = big.clone();
    data_only[600..600 + 2048].fill(0);
    assert_eq!(found(&inspect(&data_only)), vec![]);
}

#[test]
fn trailing_garbage_after_the_end() {
    let mut bytes = clean();
    let n = bytes.len() as u64;
    bytes.extend_from_slice(b"garbage");
    assert_eq!(
        found(&inspect(&bytes)),
        vec![(FindingKind::TrailingData, Some(n))]
    );
    let mut bytes = clean();
    bytes.extend_from_slice(&[0; 512]);
    bytes.extend_from_slice(&[0, 0, 7]);
    bytes.resize(bytes.len() + 509, 0);
    assert_eq!(
        found(&inspect(&bytes)),
        vec![(FindingKind::TrailingData, Some(n + 512 + 2))]
    );
    // A second archive appended: readers read only the first.
    let mut two = clean();
    two.extend_from_slice(&clean());
    assert_eq!(
        found(&inspect(&two)),
        vec![(FindingKind::PrematureEnd, Some(n - 1024))]
    );
}

#[test]
fn split_and_duplicate_samples() {
    let split = shard(&[("a", "jpg", b"1"), ("b", "jpg", b"2"), ("a", "txt", b"3")]);
    let i = inspect(&split);
    assert_eq!(found(&i), vec![(FindingKind::SplitSample, Some(2048))]);
    assert_eq!(i.samples, Some(3), "readers count the split sample twice");
    let dup = shard(&[("k", "JPG", b"1"), ("k", "jpg", b"2")]);
    let i = inspect(&dup);
    assert_eq!(
        found(&i),
        vec![
            (FindingKind::BadName, Some(0)),
            (FindingKind::DuplicateField, Some(1024))
        ]
    );
}

#[test]
fn names_readers_mishandle() {
    let mut bytes = member(b"noext", b"x", b'0');
    bytes.extend(member(b"dir/.hidden", b"x", b'0'));
    bytes.extend(member(b"\xff\xfe.jpg", b"x", b'0'));
    bytes.extend(member(b"__meta__/x.json", b"{}", b'0'));
    bytes.extend(end());
    let kinds: Vec<FindingKind> = inspect(&bytes).findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            FindingKind::NoExtension,
            FindingKind::NoExtension,
            FindingKind::BadName,
            FindingKind::BadName
        ]
    );
}

#[test]
fn long_names_in_every_encoding() {
    let long = format!("{}/k.jpg", "d".repeat(120));
    // GNU long-name record.
    let mut gnu = member(b"././@LongLink", format!("{long}\0").as_bytes(), b'L');
    gnu.extend(member(&long.as_bytes()[..100], b"x", b'0'));
    gnu.extend(end());
    let i = inspect(&gnu);
    assert_eq!(found(&i), vec![(FindingKind::LongName, Some(0))]);
    assert_eq!(i.first_key.as_deref(), Some(&long[..long.len() - 4]));
    // PAX path record.
    let record = format!("path={long}\n");
    let len = record.len() + 4;
    let mut pax = member(b"PaxHeaders/x", format!("{len} {record}").as_bytes(), b'x');
    pax.extend(member(b"short.jpg", b"x", b'0'));
    pax.extend(end());
    let i = inspect(&pax);
    assert_eq!(found(&i), vec![(FindingKind::LongName, Some(0))]);
    assert_eq!(i.first_key.as_deref(), Some(&long[..long.len() - 4]));
    // ustar prefix field.
    let mut prefixed = raw_header(b"k.jpg", 1, b'0', b"some/dir").to_vec();
    prefixed.extend_from_slice(&[b'x'; 512]);
    prefixed.extend(end());
    let i = inspect(&prefixed);
    assert_eq!(found(&i), vec![(FindingKind::LongName, Some(0))]);
    assert_eq!(i.first_key.as_deref(), Some("some/dir/k"));
}

#[test]
fn links_and_directories() {
    let mut bytes = member(b"dir/", b"", b'5');
    bytes.extend(member(b"a.jpg", b"", b'2'));
    bytes.extend(member(b"b.jpg", b"data", b'0'));
    bytes.extend(end());
    let i = inspect(&bytes);
    assert_eq!(found(&i), vec![(FindingKind::NonRegularMember, Some(512))]);
    assert_eq!(i.samples, Some(1));
}

/// Found by fuzzing (`tar`): a PAX record `size=18446744073709551615` made the padding
/// computation overflow (a panic in debug builds, a wrong walk in release). The fuzzed
/// file's first PAX header is itself malformed, which the shared PAX parser reports
/// before the record is reached; the record is checked on its own as well.
#[test]
fn a_member_size_no_file_can_hold_is_a_bad_header() {
    use crate::webdataset::ustar::testing::{file, pax, record};
    let fuzzed = include_bytes!("testdata/fuzz-pax-size-overflow.tar");
    let mut made = pax("k.jpg", &[record("size", b"18446744073709551615")]);
    made.extend(file("k.jpg", b"x"));
    for (bytes, words) in [
        (&fuzzed[..], "PAX extended header is malformed"),
        (&made[..], "larger than any file"),
    ] {
        for piece in [1, 511, bytes.len()] {
            let inspection = inspect_in(bytes, piece);
            assert!(
                inspection
                    .findings
                    .iter()
                    .any(|f| f.kind == FindingKind::BadHeader && f.message.contains(words)),
                "{:?}",
                inspection.findings
            );
        }
    }
}

#[test]
fn findings_are_capped_and_the_rest_counted() {
    // Every member after the first is a duplicate field (an error) with an upper-case
    // extension (a warning): two findings per 512 bytes.
    let members = MAX_FINDINGS / 2 + 100;
    let mut bytes = member(b"k.JPG", b"", b'0').repeat(members);
    bytes.extend(end());
    let i = inspect_in(&bytes, 1 << 16);
    assert_eq!(i.findings.len(), MAX_FINDINGS + 1);
    let last = i.findings.last().unwrap();
    assert_eq!(
        last.kind,
        FindingKind::DuplicateField,
        "the first one left out"
    );
    assert!(last.is_error(), "errors were left out");
    let listed = (members - 1) * 2 + 1;
    assert!(
        last.message.starts_with(&format!(
            "{} more finding(s) in this shard are not listed (the first {MAX_FINDINGS} are)",
            listed - MAX_FINDINGS
        )),
        "{}",
        last.message
    );
    assert_eq!(i.samples, Some(1));
}
