//! Listing → samples: files grouped by key, fields sorted, names and samples the format
//! cannot represent left out with the reason.

use rayon::slice::ParallelSliceMut;
use shardsmith_manifest::Skipped;

use shardsmith_shard::naming::split_key;
use shardsmith_shard::sample::Interner;
use shardsmith_shard::{FieldSpec, SampleSpec};
use shardsmith_store::ListedFile;

/// Samples in key order, and the files left out.
pub(crate) struct Grouped {
    pub samples: Vec<SampleSpec>,
    pub skipped: Vec<Skipped>,
}

/// Key and extension (as spelled) of a path that passed [`split_key`].
fn parts(rel: &str) -> (&str, &str) {
    let base = rel.rfind('/').map_or(0, |i| i + 1);
    let dot = base + rel[base..].find('.').unwrap_or(rel.len() - base);
    (&rel[..dot], rel.get(dot + 1..).unwrap_or_default())
}

/// Orders field names as their lowercase forms order.
fn cmp_lower(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

pub(crate) fn group(mut files: Vec<ListedFile>) -> Grouped {
    let mut skipped = Vec::new();
    files.retain_mut(|file| match split_key(&file.rel) {
        Ok(_) => true,
        Err(reason) => {
            skipped.push(Skipped {
                path: std::mem::take(&mut file.rel),
                reason: reason.to_string(),
            });
            false
        }
    });
    // Sorted in place by key, then field: the files of one key need not be neighbours in
    // path order (`a.b/c.jpg` sorts between `a.aaa` and `a.zzz`).
    files.par_sort_unstable_by(|a, b| {
        let (ka, ea) = parts(&a.rel);
        let (kb, eb) = parts(&b.rel);
        ka.cmp(kb)
            .then_with(|| cmp_lower(ea, eb))
            .then_with(|| ea.cmp(eb))
    });
    // Exact capacity (no doubling), and each input path is dropped as its sample is
    // built, its buffer reused for the key: the listing and the plan never both hold
    // every path, which bounds the peak per input file.
    let keys = files
        .windows(2)
        .filter(|w| parts(&w[0].rel).0 != parts(&w[1].rel).0)
        .count()
        + usize::from(!files.is_empty());
    let mut names = Interner::default();
    let mut samples = Vec::with_capacity(keys);
    let mut group: Vec<ListedFile> = Vec::new();
    let mut files = files.into_iter().peekable();
    while let Some(first) = files.next() {
        let key_len = parts(&first.rel).0.len();
        group.clear();
        group.push(first);
        while let Some(next) = files.next_if(|f| parts(&f.rel).0 == &group[0].rel[..key_len]) {
            group.push(next);
        }
        let fields: Vec<FieldSpec> = group
            .iter()
            .map(|f| {
                let source = parts(&f.rel).1;
                FieldSpec {
                    ext: names.get(&source.to_ascii_lowercase()),
                    source_ext: names.get(source),
                    size: f.size,
                    encoded: f.size,
                }
            })
            .collect();
        let duplicate = group.windows(2).zip(fields.windows(2)).find(|(_, f)| f[0].ext == f[1].ext).map(|(w, f)| {
            format!(
                "belongs to sample `{}`, which has two files for field `{}` (`{}` and `{}`); readers fail on such samples, so neither is packed",
                &w[0].rel[..key_len], f[0].ext, w[0].rel, w[1].rel
            )
        });
        if let Some(reason) = duplicate {
            skipped.extend(group.drain(..).map(|f| Skipped {
                path: f.rel,
                reason: reason.clone(),
            }));
            continue;
        }
        let mut key = std::mem::take(&mut group[0].rel);
        key.truncate(key_len);
        samples.push(SampleSpec {
            origin: 0,
            key,
            fields,
        });
    }
    Grouped { samples, skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rel: &str, size: u64) -> ListedFile {
        ListedFile {
            rel: rel.into(),
            size,
        }
    }

    #[test]
    fn groups_by_key_and_leaves_out_what_readers_break_on() {
        let files = vec![
            file("cat/1.jpg", 10),
            file("cat/1.json", 2),
            file("cat/1.JPG", 3),
            file("cat/2.txt", 4),
            file("cat/2.seg.png", 5),
            file("README", 6),
        ];
        let g = group(files);
        assert_eq!(g.samples.len(), 1);
        assert_eq!(g.samples[0].key, "cat/2");
        let exts: Vec<&str> = g.samples[0].fields.iter().map(|f| &*f.ext).collect();
        assert_eq!(exts, ["seg.png", "txt"]);
        let mut reasons: Vec<(String, String)> =
            g.skipped.into_iter().map(|s| (s.path, s.reason)).collect();
        reasons.sort();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(reasons[0].1.contains("no extension"));
        assert!(reasons[1].0 == "cat/1.JPG" && reasons[1].1.contains("two files for field `jpg`"));
        assert!(reasons[3].0 == "cat/1.json" && reasons[3].1.contains("neither is packed"));
    }
}
