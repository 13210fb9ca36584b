use std::path::Path;

use shardsmith_manifest::FindingKind;

use super::read::{Chunk, Reader};
use super::*;
use crate::dcp::meta::Item;

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

/// (cause, data file) of every problem, and the tensors read whole.
fn problems(dir: &Path) -> (Vec<(Cause, Option<String>)>, Vec<String>) {
    let (tensors, problems) = resolve(dir, ".metadata").unwrap();
    (
        problems.into_iter().map(|p| (p.cause, p.file)).collect(),
        tensors.into_iter().map(|t| t.name).collect(),
    )
}

#[test]
fn every_chunk_is_held_against_the_data_stored_for_it() {
    for name in ["dcp1", "dcp2", "dcp_st"] {
        let t = copy(name);
        let (found, mut read) = problems(t.path());
        read.sort();
        assert_eq!(
            (found, read),
            (vec![], vec!["model.b".into(), "model.w".into()]),
            "{name}"
        );
    }
    // What dcp.load never reads is no problem: bytes after the last item.
    let t = copy("dcp2");
    let rank1 = t.path().join("__1_0.distcp");
    let mut bytes = std::fs::read(&rank1).unwrap();
    let size = bytes.len() as u64;
    bytes.extend_from_slice(&[0; 100]);
    std::fs::write(&rank1, &bytes).unwrap();
    assert_eq!(problems(t.path()).0, []);
    // Cut short: past the end (layout names it); gone: a file problem (layout names it).
    std::fs::OpenOptions::new()
        .write(true)
        .open(&rank1)
        .unwrap()
        .set_len(size - 1000)
        .unwrap();
    let f = Some("__1_0.distcp".to_string());
    assert!(problems(t.path()).0.contains(&(Cause::PastEnd, f.clone())));
    std::fs::remove_file(&rank1).unwrap();
    let (found, read) = problems(t.path());
    assert_eq!(found, [(Cause::File, f.clone()), (Cause::File, f)]);
    assert_eq!(
        read,
        Vec::<String>::new(),
        "both tensors have a chunk on rank 1"
    );
}

#[test]
fn a_chunk_whose_sizes_disagree_with_its_data_is_a_mismatch_in_verify_and_diff() {
    // dcp2_outside: chunk 1 of `model.w` declared [96, 64] over data stored [64, 64].
    let t = copy("dcp2_outside");
    let (found, _) = problems(t.path());
    assert_eq!(found, [(Cause::Mismatch, Some("__1_0.distcp".into()))]);
    let findings = check(t.path(), ".metadata", &|_| false);
    assert_eq!(findings.len(), 1);
    let f = &findings[0];
    assert_eq!(
        (f.kind, f.path.as_str()),
        (FindingKind::BadTensor, "__1_0.distcp")
    );
    assert!(
        f.message
            .contains("stored with shape [64, 64], but .metadata declares [96, 64]")
    );
    let error = directory(t.path(), ".metadata").unwrap_err().to_string();
    assert!(error.ends_with(&f.message), "{error}");
}

#[test]
fn overlapping_items_are_read_up_to_twice_the_data_files_then_refused() {
    // Items over the same bytes (a hostile .metadata can hold a million): each is read
    // once, and only while they span at most twice the data files' bytes.
    let t = copy("dcp2");
    let size = std::fs::metadata(t.path().join("__0_0.distcp"))
        .unwrap()
        .len();
    let first = crate::dcp::meta::items_of(t.path(), "__0_0.distcp").unwrap()[0].clone();
    assert_eq!(first.length, size, "one chunk fills rank 0's file");
    let items: Vec<Item> = (0..4)
        .map(|k| Item {
            length: size - k,
            ..first.clone()
        })
        .collect();
    let refs: Vec<&Item> = items.iter().collect();
    let mut reader = Reader::new(t.path(), ".metadata", &refs);
    let meta = t.path().join(".metadata");
    let chunk = Chunk {
        index: 0,
        sizes: &[64, 64],
        dtype: crate::values::TensorDtype::F32,
        meta: &meta,
    };
    let causes: Vec<Option<Cause>> = items
        .iter()
        .map(|i| reader.piece(i, &chunk).err().map(|e| e.0))
        .collect();
    // The first is the chunk itself; the second ends 1 byte early (no zip ends there);
    // the budget is spent before the third.
    assert_eq!(
        causes,
        [
            None,
            Some(Cause::Container),
            Some(Cause::Overlap),
            Some(Cause::Overlap)
        ]
    );
}
