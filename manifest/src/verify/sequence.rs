//! Gaps in numbered shard names (`shard-000003.tar` missing between 2 and 4): the only
//! way to notice a missing shard when there is no manifest.
//!
//! Numbers in names are not always a shard sequence (`ARROW-GH-41317.parquet` beside
//! `ARROW-GH-43605.parquet` are two files named after issues), so a group of names counts
//! as a sequence only when it looks like one a writer made: it starts where writers start
//! (0 or 1), or its names fill at least half of the range between its lowest and highest
//! number. A group that is neither is left alone rather than reported as thousands of
//! missing shards.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Finding, FindingKind};

/// Reports gaps in numbered sequences like `shard-000000.tar .. shard-000009.tar` or
/// `shard.00000.mds ..`: a missing middle shard is otherwise invisible without a manifest.
pub(super) fn sequence_gaps<'a>(
    paths: impl Iterator<Item = &'a String>,
    findings: &mut Vec<Finding>,
) {
    let paths: Vec<&String> = paths.collect();
    let indexed_dirs: BTreeSet<&str> = paths
        .iter()
        .filter_map(|p| {
            p.strip_suffix("index.json")
                .filter(|d| d.is_empty() || d.ends_with('/'))
        })
        .collect();
    let mut groups: BTreeMap<(String, String, usize), BTreeSet<u64>> = BTreeMap::new();
    for path in paths {
        let dir = path.rfind('/').map_or("", |i| &path[..=i]);
        if indexed_dirs.contains(dir) {
            continue; // a dataset index says which shards belong; it is checked instead
        }
        let Some((stem, ext)) = path.rsplit_once('.') else {
            continue;
        };
        let digits = stem.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits < 4 || digits == stem.len() {
            continue;
        }
        let (prefix, number) = stem.split_at(stem.len() - digits);
        if !prefix.ends_with(['-', '_', '.']) {
            continue;
        }
        if let Ok(n) = number.parse::<u64>() {
            groups
                .entry((prefix.to_string(), ext.to_string(), digits))
                .or_default()
                .insert(n);
        }
    }
    for ((prefix, ext, width), numbers) in groups {
        let (Some(&low), Some(&high)) = (numbers.first(), numbers.last()) else {
            continue;
        };
        if numbers.len() < 2 || high - low + 1 == numbers.len() as u64 {
            continue;
        }
        if !is_sequence(low, high, numbers.len()) {
            continue;
        }
        let name = |n: u64| format!("{prefix}{n:0width$}.{ext}");
        let mut n = low;
        while n < high {
            if numbers.contains(&n) {
                n += 1;
                continue;
            }
            let run_end = numbers.range(n..).next().copied().unwrap_or(high);
            let count = run_end - n;
            let message = if count == 1 {
                format!("gap in the shard sequence {}..{}", name(low), name(high))
            } else {
                format!(
                    "{count} shards missing from the sequence, {}..{} (or the highest numbers are stale extras)",
                    name(n),
                    name(run_end - 1)
                )
            };
            findings.push(Finding::error(FindingKind::MissingFile, name(n), message));
            n = run_end;
        }
    }
}

/// Whether `count` numbers between `low` and `high` look like a writer's shard sequence
/// (with some missing) rather than numbers that happen to be in names.
fn is_sequence(low: u64, high: u64, count: usize) -> bool {
    let span = high - low + 1;
    low <= 1 || (count as u64).saturating_mul(2) >= span
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(names: &[&str]) -> Vec<(String, String)> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut findings = Vec::new();
        sequence_gaps(names.iter(), &mut findings);
        findings.into_iter().map(|f| (f.path, f.message)).collect()
    }

    #[test]
    fn a_gap_in_a_writers_sequence_is_missing() {
        let found = gaps(&["s-0001.tar", "s-0002.tar", "s-0004.tar"]);
        assert_eq!(
            found,
            [(
                "s-0003.tar".to_string(),
                "gap in the shard sequence s-0001.tar..s-0004.tar".to_string()
            )]
        );
        // From 0, however sparse: a writer's numbering starts there.
        let found = gaps(&["shard-000000.tar", "shard-000009.tar"]);
        assert_eq!(found.len(), 1);
        assert!(found[0].1.starts_with("8 shards missing"), "{found:?}");
        // Not from 0 or 1 but dense: a later part of a sequence (a split run's task).
        let found = gaps(&["part-00100.mds", "part-00101.mds", "part-00103.mds"]);
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn numbers_that_are_not_a_sequence_are_left_alone() {
        assert_eq!(
            gaps(&["ARROW-GH-41317.parquet", "ARROW-GH-43605.parquet"]),
            []
        );
        assert_eq!(gaps(&["run-2024.log", "run-2026.log", "run-2031.log"]), []);
        // Complete sequences have nothing to report, wherever they start.
        assert_eq!(gaps(&["x-5000.tar", "x-5001.tar"]), []);
    }
}
