//! Listing → samples: files grouped by key, fields sorted, names and samples the format
//! cannot represent left out with the reason.

use std::collections::BTreeMap;

use shardsmith_manifest::Skipped;

use crate::format::{FieldSpec, SampleSpec, ShardFormat};
use crate::naming::split_key;
use crate::source::InputFile;

/// Samples in key order, and the files left out.
pub(crate) struct Grouped {
    pub samples: Vec<SampleSpec>,
    pub skipped: Vec<Skipped>,
}

pub(crate) fn group(files: Vec<InputFile>, format: &dyn ShardFormat) -> Grouped {
    let mut skipped = Vec::new();
    let mut by_key: BTreeMap<String, Vec<FieldSpec>> = BTreeMap::new();
    for file in files {
        match split_key(&file.rel) {
            Ok((key, ext)) => {
                let key = key.to_string();
                by_key.entry(key).or_default().push(FieldSpec {
                    ext,
                    rel: file.rel,
                    size: file.size,
                });
            }
            Err(reason) => skipped.push(Skipped {
                path: file.rel,
                reason,
            }),
        }
    }
    let mut samples = Vec::with_capacity(by_key.len());
    for (key, mut fields) in by_key {
        fields.sort_by(|a, b| a.ext.cmp(&b.ext).then_with(|| a.rel.cmp(&b.rel)));
        let duplicate = fields.windows(2).find(|w| w[0].ext == w[1].ext).map(|w| {
            format!(
                "belongs to sample `{key}`, which has two files for field `{}` (`{}` and `{}`); readers fail on such samples, so neither is packed",
                w[0].ext, w[0].rel, w[1].rel
            )
        });
        let sample = SampleSpec { key, fields };
        if let Some(reason) = duplicate.or_else(|| format.refuse(&sample)) {
            skipped.extend(sample.fields.into_iter().map(|f| Skipped {
                path: f.rel,
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
    use crate::webdataset::WebDataset;

    fn file(rel: &str, size: u64) -> InputFile {
        InputFile {
            rel: rel.into(),
            size,
        }
    }

    #[test]
    fn groups_by_key_and_leaves_out_what_readers_break_on() {
        let long = format!("{}.jpg", "x".repeat(100));
        let files = vec![
            file("cat/1.jpg", 10),
            file("cat/1.json", 2),
            file("cat/1.JPG", 3),
            file("cat/2.txt", 4),
            file("cat/2.seg.png", 5),
            file("README", 6),
            file(&long, 7),
        ];
        let g = group(files, &WebDataset);
        assert_eq!(g.samples.len(), 1);
        assert_eq!(g.samples[0].key, "cat/2");
        let exts: Vec<&str> = g.samples[0].fields.iter().map(|f| f.ext.as_str()).collect();
        assert_eq!(exts, ["seg.png", "txt"]);
        let mut reasons: Vec<(String, String)> =
            g.skipped.into_iter().map(|s| (s.path, s.reason)).collect();
        reasons.sort();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(reasons[0].1.contains("no extension"));
        assert!(reasons[1].0 == "cat/1.JPG" && reasons[1].1.contains("two files for field `jpg`"));
        assert!(reasons[3].0 == "cat/1.json" && reasons[3].1.contains("neither is packed"));
        assert!(reasons[4].1.contains("104 bytes"));
    }
}
