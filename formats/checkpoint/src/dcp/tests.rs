use std::fs::File;
use std::path::Path;

use shardsmith_manifest::{Finding, FindingKind, Inspector, Severity};

use super::meta::Item;
use super::plan::by_items;
use super::*;
use crate::report::Settings;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/checkpoints"
);

/// A copy of the committed DCP fixture `name` (made by torch: tests/fixtures/checkpoints).
fn copy(name: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(format!("{FIXTURES}/{name}")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), t.path().join(entry.file_name())).unwrap();
    }
    t
}

fn settings(size: u64) -> Settings {
    Settings {
        size,
        scan_values: false,
        holes: Vec::new(),
    }
}

/// Feeds `bytes` to `inspector` as `verify` does (in blocks, here of 4 KiB).
fn run(mut inspector: DcpDataInspector, bytes: &[u8]) -> Vec<Finding> {
    for block in bytes.chunks(4096) {
        inspector.update(block);
    }
    Box::new(inspector).finish().findings
}

/// The findings of the data file `rel` of `root`, split by [`locate`].
fn inspect(root: &Path, rel: &str) -> Vec<Finding> {
    let path = root.join(rel);
    let bytes = std::fs::read(&path).unwrap();
    let size = bytes.len() as u64;
    let plan = locate(
        root,
        rel,
        &mut File::open(&path).unwrap(),
        size,
        &bytes[..64],
    );
    run(DcpDataInspector::new(rel, plan, settings(size)), &bytes)
}

fn kinds(findings: &[Finding]) -> Vec<(FindingKind, Severity)> {
    findings.iter().map(|f| (f.kind, f.severity)).collect()
}

#[test]
fn items_are_read_where_metadata_puts_them_and_what_follows_is_trailing() {
    let t = copy("dcp2");
    let path = t.path().join("__1_0.distcp");
    assert_eq!(inspect(t.path(), "__1_0.distcp"), []);
    let mut bytes = std::fs::read(&path).unwrap();
    let end = bytes.len() as u64;
    bytes.extend_from_slice(&[7; 100]);
    std::fs::write(&path, &bytes).unwrap();
    let found = inspect(t.path(), "__1_0.distcp");
    assert_eq!(
        kinds(&found),
        [(FindingKind::TrailingData, Severity::Warning)]
    );
    assert_eq!(
        (found[0].offset, found[0].end),
        (Some(end), Some(end + 100))
    );
    // Without .metadata nothing says where the last zip ends: walked from the end of
    // the file, it is cut short (and the missing .metadata is an error of its own).
    std::fs::remove_file(t.path().join(".metadata")).unwrap();
    let found = inspect(t.path(), "__1_0.distcp");
    assert_eq!(kinds(&found), [(FindingKind::Truncated, Severity::Error)]);
}

#[test]
fn a_safetensors_format_file_is_split_with_or_without_metadata() {
    let t = copy("dcp_st");
    let rel = "__0_0.distcp";
    let path = t.path().join(rel);
    let size = std::fs::metadata(&path).unwrap().len();
    let items = meta::items_of(t.path(), rel).unwrap();
    let file = File::open(&path).unwrap();
    let at = blob::from_items(&file, size, &items).unwrap();
    assert!(at > 0, "the zip of the bytes item `step` comes first");
    assert_eq!(inspect(t.path(), rel), []);
    std::fs::remove_file(t.path().join(".metadata")).unwrap();
    assert_eq!(blob::scan(&mut File::open(&path).unwrap(), size), Some(at));
    assert_eq!(inspect(t.path(), rel), []);
}

/// A data file of the items of dcp2's `__1_0.distcp` each stored as a zstd frame (as
/// the ZStandard extension writes them), with `extra` bytes after each frame inside
/// its item, and the items recording it.
fn compressed(extra: &[u8]) -> (tempfile::TempDir, Vec<u8>, Vec<Item>) {
    let t = copy("dcp2");
    let plain = std::fs::read(t.path().join("__1_0.distcp")).unwrap();
    let mut bytes = Vec::new();
    let mut items = Vec::new();
    for mut item in meta::items_of(t.path(), "__1_0.distcp").unwrap() {
        let zip = &plain[item.offset as usize..item.end() as usize];
        let mut frame = zstd::encode_all(zip, 3).unwrap();
        frame.extend_from_slice(extra);
        item.offset = bytes.len() as u64;
        item.length = frame.len() as u64;
        item.transforms = vec!["stream.zstd/1".into()];
        bytes.extend_from_slice(&frame);
        items.push(item);
    }
    std::fs::write(t.path().join("z.distcp"), &bytes).unwrap();
    (t, bytes, items)
}

fn inspect_items(root: &Path, bytes: &[u8], items: Vec<Item>) -> Vec<Finding> {
    let size = bytes.len() as u64;
    let mut file = File::open(root.join("z.distcp")).unwrap();
    let plan = by_items("z.distcp", &mut file, size, items);
    run(
        DcpDataInspector::new("z.distcp", plan, settings(size)),
        bytes,
    )
}

#[test]
fn zstd_items_are_decoded_and_their_zips_checked() {
    let (t, bytes, items) = compressed(b"");
    assert!(items.iter().any(|i| i.chunk.is_some()) && items.len() > 1);
    assert_eq!(inspect_items(t.path(), &bytes, items.clone()), []);
    // An item over the bytes of another (a layout finding) is not decoded again.
    let mut twice = items.clone();
    twice.insert(1, items[0].clone());
    assert_eq!(inspect_items(t.path(), &bytes, twice), []);

    // Bytes after a frame, inside its item: the reader stops at the frame's end.
    let (tail_dir, tail_bytes, with_tail) = compressed(&[1, 2, 3]);
    let found = inspect_items(tail_dir.path(), &tail_bytes, with_tail.clone());
    assert_eq!(found.len(), with_tail.len());
    for (f, item) in found.iter().zip(&with_tail) {
        assert_eq!(
            (f.kind, f.severity),
            (FindingKind::TrailingData, Severity::Warning)
        );
        assert_eq!((f.offset, f.end), (Some(item.end() - 3), Some(item.end())));
    }

    // A frame cut short inside its item: an error, the reader fails on it.
    let mut cut = items.clone();
    let last = cut.len() - 1;
    cut[last].length -= 10;
    let found = inspect_items(t.path(), &bytes, cut.clone());
    assert_eq!(
        kinds(&found),
        [
            (FindingKind::TrailingData, Severity::Warning),
            (FindingKind::Truncated, Severity::Error),
        ]
    );
    assert!(
        found[1].message.contains(&cut[last].label()),
        "{}",
        found[1].message
    );

    // A limit below what the item decodes to: not checked, named (never damage).
    let mut small = items.clone();
    small[0].limit = 100;
    let found = inspect_items(t.path(), &bytes, small);
    assert_eq!(
        kinds(&found),
        [(FindingKind::UnsupportedTransform, Severity::Warning)]
    );

    // A transform nobody knows: named, not checked.
    let mut unknown = items.clone();
    unknown[0].transforms = vec!["stream.lz4/1".into()];
    let found = inspect_items(t.path(), &bytes, unknown);
    assert_eq!(
        kinds(&found),
        [(FindingKind::UnsupportedTransform, Severity::Warning)]
    );
    assert!(found[0].message.contains("`stream.lz4/1`"));
}

#[test]
fn damage_inside_a_compressed_zip_is_named_by_its_item() {
    // Whatever the byte changed, the decoder or the CRC-32 of the zip inside notices.
    let (t, clean, items) = compressed(b"");
    let chunk = items.iter().find(|i| i.chunk.is_some()).unwrap();
    for at in [
        chunk.offset + 20,
        (chunk.offset + chunk.end()) / 2,
        chunk.end() - 30,
    ] {
        let mut bytes = clean.clone();
        bytes[at as usize] ^= 0x55;
        std::fs::write(t.path().join("z.distcp"), &bytes).unwrap();
        let found = inspect_items(t.path(), &bytes, items.clone());
        let errors: Vec<&Finding> = found.iter().filter(|f| f.is_error()).collect();
        assert!(!errors.is_empty(), "byte {at}: {found:?}");
        assert!(
            errors.iter().all(|f| f.message.contains(&chunk.label())
                && f.offset >= Some(chunk.offset)
                && f.end <= Some(chunk.end())),
            "byte {at}: {found:?}"
        );
    }
}

#[test]
fn an_item_that_is_not_a_zip_ending_where_recorded_is_named() {
    let t = copy("dcp2");
    let path = t.path().join("__1_0.distcp");
    let bytes = std::fs::read(&path).unwrap();
    let mut items = meta::items_of(t.path(), "__1_0.distcp").unwrap();
    items[0].length -= 1;
    let size = bytes.len() as u64;
    let plan = by_items(
        "__1_0.distcp",
        &mut File::open(&path).unwrap(),
        size,
        items.clone(),
    );
    let found = run(
        DcpDataInspector::new("__1_0.distcp", plan, settings(size)),
        &bytes,
    );
    assert_eq!(kinds(&found), [(FindingKind::BadHeader, Severity::Error)]);
    assert!(found[0].message.contains(&items[0].label()));
    assert_eq!(
        (found[0].offset, found[0].end),
        (Some(0), Some(items[0].end()))
    );
}
