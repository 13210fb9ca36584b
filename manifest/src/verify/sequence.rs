//! Gaps in numbered shard names (`shard-000003.tar` missing between 2 and 4): the only
//! way to notice a missing shard when there is no manifest.

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
