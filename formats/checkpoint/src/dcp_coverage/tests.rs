use shardsmith_manifest::FindingKind;

use super::describe::describe;
use super::metadata::check;
use super::tiling::*;
use crate::pickle;

fn c(offsets: &[u64], sizes: &[u64]) -> Chunk {
    Chunk {
        offsets: offsets.to_vec(),
        sizes: sizes.to_vec(),
    }
}

fn said(shape: &[u64], chunks: &[Chunk]) -> Vec<String> {
    coverage(shape, chunks)
        .iter()
        .map(|p| describe(shape, chunks, p))
        .collect()
}

#[test]
fn an_exact_cover_has_no_problem() {
    let halves = [c(&[0, 0], &[4, 4]), c(&[4, 0], &[4, 4])];
    assert_eq!(coverage(&[8, 4], &halves), vec![]);
    // Unordered, uneven, 2-D tiling.
    let tiles = [
        c(&[5, 2], &[3, 2]),
        c(&[0, 0], &[5, 4]),
        c(&[5, 0], &[3, 2]),
    ];
    assert_eq!(coverage(&[8, 4], &tiles), vec![]);
    assert_eq!(coverage(&[8, 4], &[c(&[0, 0], &[8, 4])]), vec![]);
    // 0-dim (scalar): one chunk with no offsets covers its one element.
    assert_eq!(coverage(&[], &[c(&[], &[])]), vec![]);
    // An empty tensor needs nothing; its empty chunk at the end is in bounds.
    assert_eq!(coverage(&[0, 4], &[]), vec![]);
    assert_eq!(coverage(&[0, 4], &[c(&[0, 0], &[0, 4])]), vec![]);
}

#[test]
fn a_gap_is_named() {
    assert_eq!(
        said(&[8, 4], &[c(&[0, 0], &[4, 4])]),
        ["elements [4..8, 0..4] are covered by no chunk (dcp.load cannot fill them)"]
    );
    // Two separate holes: the count, and the first one.
    assert_eq!(
        said(&[8, 4], &[c(&[2, 0], &[2, 4]), c(&[6, 0], &[2, 4])]),
        [
            "16 of its 32 elements are, among them [0..2, 0..4], covered by no chunk (dcp.load cannot fill them)"
        ]
    );
    assert_eq!(
        coverage(&[8, 4], &[]),
        vec![Problem::Gap {
            count: 32,
            first: Some(vec![(0, 8), (0, 4)])
        }]
    );
    assert_eq!(
        said(&[], &[]),
        ["its one element (a 0-dim tensor) is covered by no chunk (dcp.load cannot fill them)"]
    );
}

#[test]
fn overlaps_are_named_by_chunk_pair_and_region() {
    assert_eq!(
        said(&[8, 4], &[c(&[0, 0], &[4, 4]), c(&[2, 0], &[6, 4])]),
        ["chunks 0 and 1 overlap on [2..4, 0..4]"]
    );
    // Equal total volume, yet an overlap and a gap.
    let shifted = [c(&[0, 0], &[4, 4]), c(&[2, 0], &[4, 4])];
    assert_eq!(
        said(&[8, 4], &shifted),
        [
            "chunks 0 and 1 overlap on [2..4, 0..4]",
            "elements [6..8, 0..4] are covered by no chunk (dcp.load cannot fill them)"
        ]
    );
    // Touching boxes do not overlap; a chunk listed twice does.
    assert_eq!(coverage(&[4], &[c(&[0], &[2]), c(&[2], &[2])]), vec![]);
    assert_eq!(
        coverage(&[], &[c(&[], &[]), c(&[], &[])]),
        vec![Problem::Overlap(0, 1, vec![])]
    );
    // Many overlapping pairs: a few named, the rest counted.
    let same: Vec<Chunk> = (0..5).map(|_| c(&[0], &[4])).collect();
    let problems = coverage(&[4], &same);
    assert_eq!(problems.len(), MAX_NAMED + 1);
    assert_eq!(problems[MAX_NAMED], Problem::More(6, "overlap"));
}

#[test]
fn chunks_outside_the_shape_or_of_another_rank_are_named() {
    assert_eq!(
        said(&[8, 4], &[c(&[0, 0], &[8, 4]), c(&[8, 0], &[4, 4])]),
        ["chunk 1 (offsets [8, 0], sizes [4, 4]) lies outside the shape [8, 4]"]
    );
    // Partly outside: the part inside still covers.
    assert_eq!(
        coverage(&[8, 4], &[c(&[0, 0], &[4, 4]), c(&[4, 0], &[6, 4])]),
        vec![Problem::Outside(1)]
    );
    assert_eq!(
        said(&[8, 4], &[c(&[0, 0], &[8, 4]), c(&[0], &[8])]),
        [
            "chunk 1 (offsets [0], sizes [8]) does not give one offset and one size for each of its 2 dimension(s)"
        ]
    );
}

#[test]
fn huge_and_overflowing_sizes_are_findings_not_panics() {
    let max = u64::MAX;
    assert_eq!(coverage(&[max, 2], &[]), vec![Problem::TooLarge]);
    // offset + size overflows: outside, and the clipped rest is counted.
    assert_eq!(
        coverage(&[8], &[c(&[0], &[8]), c(&[4], &[max])]),
        vec![Problem::Outside(1), Problem::Overlap(0, 1, vec![(4, 8)])]
    );
    // A large tensor tiled by many chunks: the grid is too big to walk, the gap is
    // still counted.
    let big = 1u64 << 40;
    let rows: Vec<Chunk> = (0..3000).map(|i| c(&[i, 0], &[1, big])).collect();
    assert_eq!(
        coverage(&[3001, big], &rows),
        vec![Problem::Gap {
            count: big,
            first: None
        }]
    );
    let many: Vec<Chunk> = (0..=MAX_CHUNKS as u64).map(|i| c(&[i], &[1])).collect();
    assert_eq!(
        coverage(&[many.len() as u64], &many),
        vec![Problem::TooManyChunks(MAX_CHUNKS + 1)]
    );
}

#[test]
fn many_chunks_are_swept_and_a_budget_bounds_the_work() {
    // 10,000 row chunks, or 10,000 column chunks: exact covers, compared along the
    // divided dimension (a handful of comparisons each, not 50 million).
    let n = MAX_CHUNKS as u64;
    let rows: Vec<Chunk> = (0..n).map(|i| c(&[i, 0], &[1, 8])).collect();
    let cols: Vec<Chunk> = (0..n).map(|i| c(&[0, i], &[8, 1])).collect();
    for (shape, chunks) in [([n, 8], &rows), ([8, n], &cols)] {
        let mut budget = 2 * n;
        assert_eq!(coverage_within(&shape, chunks, &mut budget), vec![]);
        assert!(budget > 0);
    }
    // Every pair overlapping: the budget runs out and says so.
    let same: Vec<Chunk> = (0..100).map(|_| c(&[0], &[4])).collect();
    let mut budget = 1000;
    let problems = coverage_within(&[4], &same, &mut budget);
    assert_eq!(problems.last(), Some(&Problem::Unchecked));
    assert_eq!(budget, 0);
}

fn metadata_findings(bytes: &[u8]) -> Vec<String> {
    let p = pickle::parse(bytes).unwrap();
    check(&p, ".metadata")
        .into_iter()
        .map(|f| {
            assert_eq!(f.kind, FindingKind::BadLayout);
            f.message
        })
        .collect()
}

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/checkpoints"
);

fn fixture(dir: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{dir}/.metadata")).unwrap()
}

#[test]
fn real_metadata_is_read() {
    for dir in ["dcp1", "dcp2", "dcp_st"] {
        assert_eq!(
            metadata_findings(&fixture(dir)),
            Vec::<String>::new(),
            "{dir}"
        );
    }
    let w = "tensor `model.w` (shape [128, 64])";
    assert_eq!(
        metadata_findings(&fixture("dcp2_gap")),
        [format!(
            "{w}: elements [64..128, 0..64] are covered by no chunk (dcp.load cannot fill them)"
        )]
    );
    assert_eq!(
        metadata_findings(&fixture("dcp2_overlap")),
        [
            format!("{w}: chunks 0 and 1 overlap on [32..64, 0..64]"),
            format!(
                "{w}: elements [96..128, 0..64] are covered by no chunk (dcp.load cannot fill them)"
            ),
        ]
    );
    assert_eq!(
        metadata_findings(&fixture("dcp2_outside")),
        [format!(
            "{w}: chunk 1 (offsets [64, 0], sizes [96, 64]) lies outside the shape [128, 64]"
        )]
    );
}

#[test]
fn a_chunk_or_item_without_storage_entry_is_named() {
    // Rename the fqn of every storage key (same length, so the pickle stays valid):
    // `model.w` -> `model.x` in storage_data only, `step` -> `stop`.
    let mut bytes = fixture("dcp2");
    let storage = bytes
        .windows(12)
        .position(|w| w == b"storage_data")
        .unwrap();
    for (from, to) in [(&b"model.w"[..], &b"model.x"[..]), (b"step", b"stop")] {
        let mut n = 0;
        while let Some(at) = bytes[storage..].windows(from.len()).position(|w| w == from) {
            bytes[storage + at..storage + at + from.len()].copy_from_slice(to);
            n += 1;
        }
        assert!(n > 0);
    }
    assert_eq!(
        metadata_findings(&bytes),
        [
            "tensor `model.w` (shape [128, 64]): chunk 0 (offsets [0, 0]) and 1 more chunk(s) have no storage_data entry (dcp.load fails looking it up)",
            "item `step` has no storage_data entry (dcp.load fails looking it up)",
        ]
    );
}
