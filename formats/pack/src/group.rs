//! Listing → samples: files grouped by key, fields sorted, names and samples the format
//! cannot represent left out with the reason.

use rayon::iter::Either;
use rayon::prelude::*;
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

/// A listed file whose name passed [`split_key`], with the length of its key (its field
/// starts after the dot that follows).
struct Named {
    file: ListedFile,
    key_len: usize,
}

impl Named {
    fn key(&self) -> &str {
        &self.file.rel[..self.key_len]
    }

    /// The field's name as spelled.
    fn ext(&self) -> &str {
        &self.file.rel[self.key_len + 1..]
    }
}

/// Orders field names as their lowercase forms order.
fn cmp_lower(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

pub(crate) fn group(files: Vec<ListedFile>) -> Grouped {
    // Every name checked and split on every core, once.
    let (mut named, mut skipped): (Vec<Named>, Vec<Skipped>) =
        files.into_par_iter().partition_map(|file| {
            let split = split_key(&file.rel).map(|(key, _)| key.len());
            match split {
                Ok(key_len) => Either::Left(Named { file, key_len }),
                Err(reason) => Either::Right(Skipped {
                    path: file.rel,
                    reason: reason.to_string(),
                }),
            }
        });
    // Sorted in place by key, then field: the files of one key need not be neighbours in
    // path order (`a.b/c.jpg` sorts between `a.aaa` and `a.zzz`).
    named.par_sort_unstable_by(|a, b| {
        a.key()
            .cmp(b.key())
            .then_with(|| cmp_lower(a.ext(), b.ext()))
            .then_with(|| a.ext().cmp(b.ext()))
    });
    // Exact capacity (no doubling), and each input path is dropped as its sample is
    // built, its buffer reused for the key: the listing and the plan never both hold
    // every path, which bounds the peak per input file.
    let keys = named
        .windows(2)
        .filter(|w| w[0].key() != w[1].key())
        .count()
        + usize::from(!named.is_empty());
    let mut names = Interner::default();
    let mut samples = Vec::with_capacity(keys);
    let mut group: Vec<Named> = Vec::new();
    let mut named = named.into_iter().peekable();
    while let Some(first) = named.next() {
        group.clear();
        group.push(first);
        while let Some(next) = named.next_if(|f| f.key() == group[0].key()) {
            group.push(next);
        }
        // Samples mostly repeat the previous one's field names: those are shared as
        // they are, without lowercasing and looking them up again.
        let previous = samples
            .last()
            .map_or(&[][..], |s: &SampleSpec| &s.fields[..]);
        let fields: Vec<FieldSpec> = group
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let source = f.ext();
                let (ext, source_ext) = match previous.get(i) {
                    Some(p) if *p.source_ext == *source => (p.ext.clone(), p.source_ext.clone()),
                    _ => (names.get(&source.to_ascii_lowercase()), names.get(source)),
                };
                FieldSpec {
                    ext,
                    source_ext,
                    size: f.file.size,
                    encoded: f.file.size,
                }
            })
            .collect();
        let duplicate = group.windows(2).zip(fields.windows(2)).find(|(_, f)| f[0].ext == f[1].ext).map(|(w, f)| {
            format!(
                "belongs to sample `{}`, which has two files for field `{}` (`{}` and `{}`); readers fail on such samples, so neither is packed",
                w[0].key(), f[0].ext, w[0].file.rel, w[1].file.rel
            )
        });
        if let Some(reason) = duplicate {
            skipped.extend(group.drain(..).map(|f| Skipped {
                path: f.file.rel,
                reason: reason.clone(),
            }));
            continue;
        }
        let key_len = group[0].key_len;
        let mut key = std::mem::take(&mut group[0].file.rel);
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
