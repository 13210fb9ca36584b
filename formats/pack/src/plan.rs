//! Rollover: which samples go into which shard, decided up front from file sizes, so that
//! shards can be written in parallel and still come out identical for any `--jobs`.

use std::ops::Range;

use shardsmith_manifest::sha256_hex;
use shardsmith_shard::{SampleSpec, ShardFormat};

/// One shard to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardPlan {
    /// Shard number.
    pub index: usize,
    /// Samples it holds (indices into the sample list).
    pub samples: Range<usize>,
    /// Its exact size if every sample is packed (tar: headers, padding, end blocks).
    pub bytes: u64,
    /// True when it holds one sample that alone exceeds the shard size.
    pub oversize: bool,
}

/// Packs samples in order into shards of at most `max_bytes` (real file size, format
/// overhead included) and at most `max_samples` samples. A sample too large for any shard
/// gets a shard of its own, marked `oversize`. Never produces an empty shard.
pub fn plan(
    samples: &[SampleSpec],
    format: &dyn ShardFormat,
    max_bytes: u64,
    max_samples: Option<u64>,
) -> Vec<ShardPlan> {
    let overhead = format.shard_overhead();
    let mut plans = Vec::new();
    let mut start = 0;
    let mut bytes = overhead;
    let close = |plans: &mut Vec<ShardPlan>, start: usize, end: usize, bytes: u64| {
        plans.push(ShardPlan {
            index: plans.len(),
            samples: start..end,
            bytes,
            oversize: end - start == 1 && bytes > max_bytes,
        });
    };
    for (i, sample) in samples.iter().enumerate() {
        let size = format.sample_bytes(sample);
        let count = (i - start) as u64;
        let full = max_samples.is_some_and(|m| count >= m);
        if count > 0 && (full || bytes + size > max_bytes) {
            close(&mut plans, start, i, bytes);
            start = i;
            bytes = overhead;
        }
        bytes += size;
    }
    if start < samples.len() {
        close(&mut plans, start, samples.len(), bytes);
    }
    plans
}

/// Identifies the content planned for one shard.
pub(crate) fn plan_digest(samples: &[SampleSpec]) -> String {
    let mut out = Vec::new();
    for sample in samples {
        out.extend_from_slice(sample.key.as_bytes());
        out.push(0);
        for field in &sample.fields {
            out.extend_from_slice(
                format!("{}\0{}\0{}\n", field.ext, field.source_ext, field.size).as_bytes(),
            );
        }
    }
    sha256_hex(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sized as samples;
    use shardsmith_shard::webdataset::WebDataset;

    fn shape(plans: &[ShardPlan]) -> Vec<(usize, usize, u64, bool)> {
        plans
            .iter()
            .map(|p| (p.samples.start, p.samples.end, p.bytes, p.oversize))
            .collect()
    }

    #[test]
    fn exact_boundary_fits_and_one_byte_more_rolls_over() {
        // Each 512-byte sample takes 1024 bytes; a shard adds 1024.
        let s = samples(&[512, 512, 512]);
        assert_eq!(
            shape(&plan(&s, &WebDataset::PLAIN, 3072, None)),
            [(0, 2, 3072, false), (2, 3, 2048, false)]
        );
        assert_eq!(
            shape(&plan(&s, &WebDataset::PLAIN, 3071, None)),
            [
                (0, 1, 2048, false),
                (1, 2, 2048, false),
                (2, 3, 2048, false)
            ]
        );
        assert_eq!(
            shape(&plan(&s, &WebDataset::PLAIN, 1 << 20, None)),
            [(0, 3, 4096, false)]
        );
    }

    #[test]
    fn oversize_sample_gets_its_own_shard() {
        let s = samples(&[10, 100_000, 10]);
        assert_eq!(
            shape(&plan(&s, &WebDataset::PLAIN, 4096, None)),
            [
                (0, 1, 2048, false),
                (1, 2, 1024 + 512 + 100_352, true),
                (2, 3, 2048, false)
            ]
        );
    }

    #[test]
    fn sample_count_limit() {
        let s = samples(&[1; 5]);
        assert_eq!(
            shape(&plan(&s, &WebDataset::PLAIN, 1 << 30, Some(2))),
            [
                (0, 2, 3072, false),
                (2, 4, 3072, false),
                (4, 5, 2048, false)
            ]
        );
        assert!(plan(&[], &WebDataset::PLAIN, 1 << 30, Some(2)).is_empty());
    }
}
