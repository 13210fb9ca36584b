//! Listing → samples: files grouped by key, fields sorted, names and samples the format
//! cannot represent left out with the reason.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::slice::ParallelSliceMut;
use shardsmith_manifest::Skipped;

use crate::format::{FieldSpec, SampleSpec};
use crate::naming::split_key;
use crate::source::InputFile;

/// Samples in key order, and the files left out.
pub(crate) struct Grouped {
    pub samples: Vec<SampleSpec>,
    pub skipped: Vec<Skipped>,
}

/// One distinct `Arc<str>` per distinct field name: a corpus has few of them.
#[derive(Default)]
struct Interner(HashMap<String, Arc<str>>);

impl Interner {
    fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(text);
        self.0.insert(text.to_string(), shared.clone());
        shared
    }
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

pub(crate) fn group(mut files: Vec<InputFile>) -> Grouped {
    let mut skipped = Vec::new();
    files.retain_mut(|file| match split_key(&file.rel) {
        Ok(_) => true,
        Err(reason) => {
            skipped.push(Skipped {
                path: std::mem::take(&mut file.rel),
                reason,
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
    let mut names = Interner::default();
    let mut samples = Vec::new();
    let mut rest = files.as_slice();
    while let Some(first) = rest.first() {
        let key = parts(&first.rel).0;
        let len = rest.iter().take_while(|f| parts(&f.rel).0 == key).count();
        let (group, tail) = rest.split_at(len);
        rest = tail;
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
        let sample = SampleSpec {
            origin: 0,
            key: key.to_string(),
            fields,
        };
        let duplicate = group.windows(2).zip(sample.fields.windows(2)).find(|(_, f)| f[0].ext == f[1].ext).map(|(w, f)| {
            format!(
                "belongs to sample `{key}`, which has two files for field `{}` (`{}` and `{}`); readers fail on such samples, so neither is packed",
                f[0].ext, w[0].rel, w[1].rel
            )
        });
        if let Some(reason) = duplicate {
            skipped.extend(group.iter().map(|f| Skipped {
                path: f.rel.clone(),
                reason: reason.clone(),
            }));
            continue;
        }
        samples.push(sample);
    }
    Grouped { samples, skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rel: &str, size: u64) -> InputFile {
        InputFile {
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
