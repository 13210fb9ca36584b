//! Tests of the WebDataset tar input: tars built here with the `tar` crate (GNU long
//! names, PAX, ustar prefix), gzip and zstd, damaged at known offsets.

use shardsmith_manifest::Classify;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use shardsmith_store::{InputSource, LocalTree};

use super::*;
use crate::content::Validation;
use crate::sample::Loaded;
use crate::sample::{SampleSource, SampleSpec};

/// A tar under construction.
pub(super) struct Tar(tar::Builder<Vec<u8>>);

impl Tar {
    fn new() -> Self {
        Self(tar::Builder::new(Vec::new()))
    }

    pub(super) fn header(kind: tar::EntryType, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o644);
        h
    }

    /// A regular member (GNU long name when over 100 bytes).
    pub(super) fn file(mut self, name: &str, data: &[u8]) -> Self {
        let mut h = Self::header(tar::EntryType::Regular, data.len() as u64);
        self.0.append_data(&mut h, name, data).unwrap();
        self
    }

    /// A member whose long name is in the ustar prefix field.
    fn ustar(mut self, name: &str, data: &[u8]) -> Self {
        let mut h = tar::Header::new_ustar();
        h.set_path(name).unwrap();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        self.0.append(&h, data).unwrap();
        self
    }

    /// A member named by a PAX `path` record (its header names something else).
    fn pax(mut self, name: &str, data: &[u8]) -> Self {
        self.0
            .append_pax_extensions([("path", name.as_bytes())])
            .unwrap();
        self.ustar("placeholder.bin", data)
    }

    fn dir(mut self, name: &str) -> Self {
        let mut h = Self::header(tar::EntryType::Directory, 0);
        self.0.append_data(&mut h, name, &[][..]).unwrap();
        self
    }

    fn symlink(mut self, name: &str, target: &str) -> Self {
        let mut h = Self::header(tar::EntryType::Symlink, 0);
        self.0.append_link(&mut h, name, target).unwrap();
        self
    }

    pub(super) fn bytes(self) -> Vec<u8> {
        self.0.into_inner().unwrap()
    }
}

pub(super) fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(super) fn zst(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

pub(super) fn tree(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Arc<dyn InputSource>) {
    let dir = tempfile::tempdir().unwrap();
    for (rel, data) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
    let source: Arc<dyn InputSource> = Arc::new(LocalTree::new(dir.path()));
    (dir, source)
}

pub(super) fn open(source: &Arc<dyn InputSource>, scratch: Option<&Path>) -> TarShards {
    TarShards::open(source.clone(), "in", None, scratch.map(Path::to_path_buf)).unwrap()
}

/// A sample read back: key, and (field, bytes) in field order.
pub(super) type ReadSample = (String, Vec<(String, Vec<u8>)>);

/// Every sample, read in `order`.
pub(super) fn read_all(
    shards: &TarShards,
    samples: &[SampleSpec],
    order: &[usize],
) -> Vec<ReadSample> {
    let mut reader = shards.reader(samples, Validation::Cheap).unwrap();
    let mut out = Vec::new();
    for &i in order {
        let mut buf = Vec::new();
        let sample = &samples[i];
        let fields = match reader.load(i, &mut buf).unwrap().unwrap() {
            Loaded::Memory(ranges) => sample
                .fields
                .iter()
                .zip(ranges)
                .map(|(f, (a, b))| (f.ext.to_string(), buf[a..b].to_vec()))
                .collect(),
            Loaded::Streams(streams) => sample
                .fields
                .iter()
                .zip(streams)
                .map(|(f, mut s)| {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(&mut s, &mut v).unwrap();
                    (f.ext.to_string(), v)
                })
                .collect(),
        };
        out.push((sample.key.clone(), fields));
    }
    out
}

pub(super) fn keys(samples: &[SampleSpec]) -> Vec<&str> {
    samples.iter().map(|s| s.key.as_str()).collect()
}

fn messy() -> Vec<u8> {
    Tar::new()
        .dir("d/")
        .file("d/a.jpg.txt", b"A-jpgtxt")
        .file("d/a.JSON", b"{\"a\":1}")
        .file("d/.hidden.txt", b"h")
        .file("d/noext", b"n")
        .symlink("d/a.lnk", "a.JSON")
        .file("b.txt", b"B")
        .file("c.JPG.txt", b"c1")
        .file("c.jpg.TXT", b"c2")
        .file("__meta__/x.txt", b"m")
        .file("e.seg.txt", b"E")
        .file("d/a.cls", b"late")
        .bytes()
}

#[test]
fn groups_like_webdataset_and_leaves_out_what_readers_break_on() {
    let (_dir, source) = tree(&[("s-0.tar", &messy())]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    // `d/a` again, after other members: listed, and refused by the pack's key check.
    assert_eq!(keys(&listing.samples), ["d/a", "b", "e", "d/a"]);
    let exts: Vec<&str> = listing.samples[0].fields.iter().map(|f| &*f.ext).collect();
    assert_eq!(exts, ["jpg.txt", "json"]);
    assert_eq!(&*listing.samples[0].fields[1].source_ext, "JSON");
    let mut skipped: Vec<(String, String)> = listing
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.reason.clone()))
        .collect();
    skipped.sort();
    let expect = [
        (
            "s-0.tar/__meta__/x.txt",
            "s-0.tar: member `__meta__/x.txt` starts with a `__name__`",
        ),
        (
            "s-0.tar/c.JPG.txt",
            "two members for field `jpg.txt` (`c.JPG.txt` and `c.jpg.TXT`)",
        ),
        ("s-0.tar/c.jpg.TXT", "none of its members is packed"),
        (
            "s-0.tar/d/.hidden.txt",
            "member `d/.hidden.txt` is a hidden file",
        ),
        ("s-0.tar/d/a.lnk", "is a symbolic link, not a regular file"),
        ("s-0.tar/d/noext", "has no extension"),
    ];
    assert_eq!(skipped.len(), expect.len(), "{skipped:#?}");
    for ((path, reason), (want_path, want)) in skipped.iter().zip(expect) {
        assert_eq!(path, want_path);
        assert!(reason.contains(want), "{path}: {reason}");
    }
    let read = read_all(&shards, &listing.samples, &[2, 0, 1]);
    assert_eq!(
        read[0],
        ("e".into(), vec![("seg.txt".into(), b"E".to_vec())])
    );
    assert_eq!(
        read[1].1,
        [
            ("jpg.txt".into(), b"A-jpgtxt".to_vec()),
            ("json".into(), b"{\"a\":1}".to_vec())
        ]
    );
    let s = &listing.samples[0];
    assert_eq!(shards.field_path(s, &s.fields[1]), "s-0.tar/d/a.JSON");
    assert_eq!(shards.container(s).as_deref(), Some("s-0.tar"));
    assert_eq!(shards.shuffle_refusal(), None);
    assert_eq!(shards.head(s, &s.fields[0], 3).unwrap(), b"A-j");
}

#[test]
fn long_names_of_every_kind_key_correctly() {
    let long = format!("{}/{}", "d".repeat(80), "k".repeat(40));
    let tar = Tar::new()
        .file(&format!("{long}1.txt"), b"gnu")
        .pax(&format!("{long}2.txt"), b"pax")
        .ustar(&format!("{long}3.txt"), b"ustar")
        .pax("zürich/ö.txt", b"utf8")
        .file("empty.txt", b"")
        .bytes();
    let (_dir, source) = tree(&[("a.tar", &tar)]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    assert!(listing.skipped.is_empty(), "{:?}", listing.skipped);
    let want = [
        format!("{long}1"),
        format!("{long}2"),
        format!("{long}3"),
        "zürich/ö".into(),
        "empty".into(),
    ];
    assert_eq!(keys(&listing.samples), want);
    let read = read_all(&shards, &listing.samples, &[4, 3, 2, 1, 0]);
    let data: Vec<&[u8]> = read.iter().map(|r| r.1[0].1.as_slice()).collect();
    assert_eq!(data, [&b""[..], b"utf8", b"ustar", b"pax", b"gnu"]);
}

#[test]
fn pax_size_overrides_the_header_size() {
    let mut tar = Tar::new().file("a.txt", b"first").0;
    tar.append_pax_extensions([("size", &b"7"[..])]).unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_path("b.txt").unwrap();
    h.set_size(0);
    h.set_cksum();
    let mut raw = tar.into_inner().unwrap();
    raw.truncate(raw.len() - 1024); // the end blocks
    raw.extend_from_slice(h.as_bytes());
    raw.extend_from_slice(b"seven!!");
    raw.resize(raw.len().next_multiple_of(512) + 1024, 0);
    let (_dir, source) = tree(&[("a.tar", &raw)]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    assert_eq!(keys(&listing.samples), ["a", "b"]);
    assert_eq!(listing.samples[1].fields[0].size, 7);
    let read = read_all(&shards, &listing.samples, &[1]);
    assert_eq!(read[0].1[0].1, b"seven!!");
}

pub(super) fn three() -> Vec<u8> {
    Tar::new()
        .file("k0.txt", &[b'0'; 700])
        .file("k0.json", b"[0]")
        .file("k1.txt", &[b'1'; 10])
        .file("k2.txt", &[b'2'; 1000])
        .bytes()
}

#[test]
fn gzip_and_zstd_shards_read_with_and_without_a_scratch_copy() {
    let plain = three();
    let (_dir, source) = tree(&[
        ("s-0.tar.gz", &gz(&plain)),
        ("s-1.tar", &zst(&Tar::new().file("z.txt", b"zz").bytes())),
        ("manifest.json", b"{}"),
        (".hidden/x", b""),
    ]);
    assert!(is_webdataset_input(source.as_ref(), None));
    let scratch = tempfile::tempdir().unwrap();
    for spill in [Some(scratch.path()), None] {
        let shards = open(&source, spill);
        let listing = shards.samples().unwrap();
        assert_eq!(keys(&listing.samples), ["k0", "k1", "k2", "z"]);
        assert_eq!(shards.shuffle_refusal().is_none(), spill.is_some());
        // Backwards: a streamed shard is decompressed again from its start.
        let read = read_all(&shards, &listing.samples, &[3, 2, 0, 1, 2]);
        assert_eq!(read[0].1[0].1, b"zz");
        assert_eq!(read[1].1[0].1, vec![b'2'; 1000]);
        assert_eq!(
            read[2].1,
            [
                ("json".into(), b"[0]".to_vec()),
                ("txt".into(), vec![b'0'; 700])
            ]
        );
        assert_eq!(read[4].1[0].1, vec![b'2'; 1000]);
        if spill.is_some() {
            assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 2);
        }
        drop(shards);
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_key_in_two_shards_is_refused_unless_prefixed() {
    use crate::keys::{KeyPrefix, check_unique};
    let a = Tar::new().file("k.txt", b"a").file("j.txt", b"j").bytes();
    let b = Tar::new().file("k.txt", b"b").file("k.cls", b"1").bytes();
    let (_dir, source) = tree(&[("a.tar", &a), ("b.tar", &b)]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    assert_eq!(keys(&listing.samples), ["k", "j", "k"]);
    assert!(listing.skipped.is_empty());
    let err = check_unique(&shards, &listing.samples, KeyPrefix::None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("key `k` is used twice, by `a.tar/k.txt` and by `b.tar/k.cls`")
            && err.contains("--key-prefix stem"),
        "{err}"
    );
    // With the shard's name before each key, both samples are packed, each read from
    // its own members.
    let shards = open(&source, None).with_key_prefix(KeyPrefix::Stem);
    let listing = shards.samples().unwrap();
    assert_eq!(keys(&listing.samples), ["a/k", "a/j", "b/k"]);
    check_unique(&shards, &listing.samples, KeyPrefix::Stem).unwrap();
    let read = read_all(&shards, &listing.samples, &[2, 0]);
    assert_eq!(
        read[0].1,
        [("cls".into(), b"1".to_vec()), ("txt".into(), b"b".to_vec())]
    );
    assert_eq!(read[1].1, [("txt".into(), b"a".to_vec())]);
    assert_eq!(
        shards.field_path(&listing.samples[2], &listing.samples[2].fields[0]),
        "b.tar/k.cls"
    );
}

#[test]
fn large_samples_are_checked_and_streamed() {
    let big = vec![7u8; 17 << 20];
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(17 << 20, 1);
    let tar = Tar::new()
        .file("a.bin", &big)
        .file("b.bin", b"x")
        .file("b.png", &png)
        .bytes();
    let (_dir, source) = tree(&[("a.tar", &tar)]);
    let shards = open(&source, None);
    let listing = shards.samples().unwrap();
    let mut reader = shards.reader(&listing.samples, Validation::Cheap).unwrap();
    let mut buf = Vec::new();
    let Loaded::Streams(mut streams) = reader.load(0, &mut buf).unwrap().unwrap() else {
        panic!("a large sample is streamed");
    };
    let mut read = Vec::new();
    std::io::Read::read_to_end(&mut streams[0], &mut read).unwrap();
    assert!(read == big);
    let Err(skips) = reader.load(1, &mut buf).unwrap() else {
        panic!("a PNG without its end marker is left out");
    };
    assert_eq!(skips.len(), 2);
    assert_eq!(skips[1].path, "a.tar/b.png");
    assert!(
        skips[0].reason.contains("left out with `a.tar/b.png`"),
        "{}",
        skips[0].reason
    );
}

#[test]
fn input_detection_and_listing() {
    let t = Tar::new().file("a.txt", b"a").bytes();
    let (_d, source) = tree(&[
        ("s.tar", &t),
        ("s.parquet", b""),
        ("s_stats.json", b"{}"),
        ("SHA256SUMS", b""),
    ]);
    assert!(is_webdataset_input(source.as_ref(), None));
    let (_d2, mixed) = tree(&[("s.tar", &t), ("photo.jpg", b"")]);
    assert!(!is_webdataset_input(mixed.as_ref(), None));
    let e = TarShards::open(mixed, "in", None, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("photo.jpg` is in the WebDataset input but is not a tar shard"),
        "{e}"
    );
    assert!(is_webdataset_input(source.as_ref(), Some("x.tar.zst")));
    assert!(!is_webdataset_input(source.as_ref(), Some("x.zip")));
    let (_d3, empty) = tree(&[("manifest.json", b"{}")]);
    assert!(!is_webdataset_input(empty.as_ref(), None));
    let e = TarShards::open(empty, "in", None, None).err().unwrap();
    assert_eq!(e.kind(), "empty_input");
}

#[test]
fn dot_slash_names_and_hard_links_are_left_out_with_the_fix() {
    // The `tar` crate drops a leading `./` from paths it is given: set the raw field.
    let mut h = Tar::header(tar::EntryType::Regular, 1);
    h.as_old_mut().name[..7].copy_from_slice(b"./a.txt");
    h.set_cksum();
    let mut b = Tar::new().0;
    b.append(&h, &b"a"[..]).unwrap();
    let mut b = Tar(b).file("b.txt", b"b").0;
    let mut h = Tar::header(tar::EntryType::Link, 0);
    b.append_link(&mut h, "c.txt", "b.txt").unwrap();
    // A type `tarfile` does not know: left out, its data skipped (600 bytes: 2 blocks).
    let mut h = Tar::header(tar::EntryType::new(b'D'), 600);
    b.append_data(&mut h, "d.txt", &[9u8; 600][..]).unwrap();
    let b = Tar(b).file("e.txt", b"e").0;
    let (_dir, source) = tree(&[("x.tar", &b.into_inner().unwrap())]);
    let listing = open(&source, None).samples().unwrap();
    assert_eq!(keys(&listing.samples), ["b", "e"]);
    let reasons: Vec<&str> = listing.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert!(
        reasons[0].starts_with("x.tar: member `./a.txt` starts with `./`"),
        "{reasons:?}"
    );
    assert!(
        reasons[0].contains("tar -C DIR -cf x.tar NAMES"),
        "{reasons:?}"
    );
    assert_eq!(
        reasons[1],
        "x.tar: member `c.txt` is a hard link, not a regular file: webdataset ignores it"
    );
    assert_eq!(
        reasons[2],
        "x.tar: member `d.txt` has tar member type `D`, not a regular file: webdataset ignores it"
    );
}
