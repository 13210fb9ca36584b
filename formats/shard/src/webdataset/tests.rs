use super::*;
use crate::format::{Field, Payload, ShardFormat};
use crate::sample::FieldSpec;
use crate::sample::SampleSpec;
use std::io;

fn spec(key: &str, sizes: &[(&str, u64)]) -> SampleSpec {
    SampleSpec {
        origin: 0,
        key: key.into(),
        fields: sizes
            .iter()
            .map(|(ext, size)| FieldSpec::new(ext, *size))
            .collect(),
    }
}

#[test]
fn sizes_are_exact() {
    let s = spec("k", &[("jpg", 0), ("json", 1), ("txt", 512), ("cls", 513)]);
    assert_eq!(
        WebDataset::PLAIN.sample_bytes(&s),
        4 * 512 + 512 + 512 + 1024
    );
    let (mut out, bytes) = crate::format::ShardOut::memory();
    let mut enc = WebDataset::PLAIN.encoder();
    let data: Vec<Vec<u8>> = s
        .fields
        .iter()
        .map(|f| vec![7u8; f.size as usize])
        .collect();
    let mut fields: Vec<Field<'_>> = s
        .fields
        .iter()
        .zip(&data)
        .map(|(f, d)| Field {
            ext: &f.ext,
            size: f.size,
            payload: Payload::Bytes(d),
        })
        .collect();
    enc.add(&mut out, &s.key, &mut fields).unwrap();
    enc.finish(&mut out).unwrap();
    let out = bytes.lock().unwrap().clone();
    assert_eq!(
        out.len() as u64,
        WebDataset::PLAIN.sample_bytes(&s) + WebDataset::PLAIN.shard_overhead()
    );
    let mut archive = tar::Archive::new(&out[..]);
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["k.jpg", "k.json", "k.txt", "k.cls"]);
}

#[test]
fn compressed_shards_are_named_sized_and_recorded_as_the_tar_inside() {
    let s = spec("k", &[("jpg", 700), ("json", 3)]);
    for (compression, name, recorded) in [
        (TarCompression::Gz(6), "p-000007.tar.gz", "gz:6"),
        (TarCompression::Zstd(19), "p-000007.tar.zst", "zstd:19"),
    ] {
        let format = WebDataset {
            compression: Some(compression),
            index: Default::default(),
        };
        assert_eq!(format.shard_name("p", 7), name);
        assert_eq!(format.options()["compression"], recorded);
        assert_eq!(
            format.sample_bytes(&s),
            WebDataset::PLAIN.sample_bytes(&s),
            "sizes count the uncompressed tar"
        );
        let (mut out, bytes) = crate::format::ShardOut::memory();
        let mut enc = format.encoder();
        let data = [vec![7u8; 700], b"{}\n".to_vec()];
        let mut fields: Vec<Field<'_>> = s
            .fields
            .iter()
            .zip(&data)
            .map(|(f, d)| Field {
                ext: &f.ext,
                size: f.size,
                payload: Payload::Bytes(d),
            })
            .collect();
        enc.add(&mut out, &s.key, &mut fields).unwrap();
        enc.finish(&mut out).unwrap();
        drop(enc);
        let shard = bytes.lock().unwrap().clone();
        let mut tar = Vec::new();
        match compression {
            TarCompression::Gz(_) => {
                io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&shard[..]), &mut tar)
            }
            TarCompression::Zstd(_) => io::Read::read_to_end(
                &mut zstd::stream::read::Decoder::new(&shard[..]).unwrap(),
                &mut tar,
            ),
        }
        .unwrap();
        assert_eq!(
            tar.len() as u64,
            format.sample_bytes(&s) + format.shard_overhead()
        );
        assert_eq!(
            tar[..512],
            member_header("k.jpg", 700).unwrap().as_bytes()[..]
        );
    }
    assert!(
        WebDataset::PLAIN.options().is_empty(),
        "plain manifests are unchanged"
    );
    assert_eq!(WebDataset::PLAIN.shard_name("p", 7), "p-000007.tar");
}

#[test]
fn header_is_plain_deterministic_ustar() {
    let h = member_header("a/b.jpg", 5).unwrap();
    let raw = h.as_bytes();
    assert_eq!(&raw[257..265], b"ustar\x0000");
    assert_eq!(raw[156], b'0');
    assert_eq!(&raw[100..107], b"0000444");
    assert!(
        raw[345..500].iter().all(|&b| b == 0),
        "prefix field must stay empty"
    );
    assert_eq!(&raw[265..272], b"bigdata");
    assert_eq!(
        h.cksum().unwrap(),
        raw.iter()
            .enumerate()
            .map(|(i, &b)| if (148..156).contains(&i) {
                32
            } else {
                u32::from(b)
            })
            .sum::<u32>()
    );
    assert!(member_header(&"x".repeat(101), 1).is_err());
}

#[test]
fn member_headers_hold_long_names_and_any_size() {
    use std::io::Read;
    let long = format!("{}/x.txt", "d".repeat(120));
    let mut out = Vec::new();
    write_member_header(&mut out, &long, 3).unwrap();
    out.extend_from_slice(b"abc");
    write_padding(&mut out, 3).unwrap();
    out.extend_from_slice(&[0; 1024]);
    assert_eq!(out.len() % BLOCK as usize, 0);
    let mut archive = tar::Archive::new(&out[..]);
    let mut entries = archive.entries().unwrap();
    let mut entry = entries.next().unwrap().unwrap();
    assert_eq!(entry.path().unwrap().to_str().unwrap(), long);
    let mut text = String::new();
    entry.read_to_string(&mut text).unwrap();
    assert_eq!(text, "abc");
    drop(entry);
    assert!(entries.next().is_none());
    // 8 GiB and more: GNU base-256, as GNU tar writes it.
    let mut big = Vec::new();
    write_member_header(&mut big, "a/1.bin", 10 << 30).unwrap();
    assert_eq!(big.len(), BLOCK as usize);
    assert_eq!(big[124], 0x80);
    assert_eq!(&big[128..136], &(10u64 << 30).to_be_bytes());
}

#[test]
fn long_names_and_huge_fields_are_refused() {
    let long_key = "d/".repeat(47) + "kk";
    assert!(
        WebDataset::PLAIN
            .refuse(&spec(&long_key, &[("jpg", 1)]))
            .is_none()
    );
    assert!(
        WebDataset::PLAIN
            .refuse(&spec(&long_key, &[("json", 1)]))
            .unwrap()
            .contains("101 bytes")
    );
    assert!(
        WebDataset::PLAIN
            .refuse(&spec("k", &[("bin", MAX_MEMBER + 1)]))
            .unwrap()
            .contains("8 GiB")
    );
}
