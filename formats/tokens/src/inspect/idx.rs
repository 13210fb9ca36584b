//! Streaming check of a Megatron `.idx`.

use std::collections::BTreeMap;

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::header::parse_idx_header;
use crate::write::{IDX_HEADER, TokenDtype};

/// Streaming check of a Megatron `.idx`.
pub(super) struct IdxInspector {
    path: String,
    head: Vec<u8>,
    /// (dtype, sequences, boundaries)
    header: Option<(TokenDtype, u64, u64)>,
    offset: u64,
    word: Vec<u8>,
    /// Running sum of lengths × item size, and the same weighted for the pointer check.
    sum: i64,
    sizes_hash: u64,
    pointers_hash: u64,
    /// r^k of the next length and of the next pointer (polynomial fingerprints: pointers
    /// are checked against the running sums without holding the lengths).
    weight: u64,
    pointer_weight: u64,
    last_pointer: i64,
    last_boundary: i64,
    findings: Vec<Finding>,
}

const HASH_BASE: u64 = 0x9e37_79b9_7f4a_7c15;

impl IdxInspector {
    pub(super) fn new(path: String) -> Self {
        Self {
            path,
            head: Vec::with_capacity(IDX_HEADER as usize),
            header: None,
            offset: 0,
            word: Vec::with_capacity(8),
            sum: 0,
            sizes_hash: 0,
            pointers_hash: 0,
            weight: 1,
            pointer_weight: 1,
            last_pointer: -1,
            last_boundary: -1,
            findings: Vec::new(),
        }
    }

    fn bad(&mut self, at: u64, message: String) {
        if self
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::BadIndex)
            .count()
            < 3
        {
            self.findings
                .push(Finding::error(FindingKind::BadIndex, &self.path, message).at(at));
        }
    }

    /// One array element starting at `at`.
    fn element(&mut self, at: u64, bytes: &[u8]) {
        let Some((dtype, s, d)) = self.header else {
            return;
        };
        let sizes_end = IDX_HEADER + 4 * s;
        let pointers_end = sizes_end + 8 * s;
        if at < sizes_end {
            let len = i32::from_le_bytes(bytes.try_into().expect("4 bytes"));
            if len < 0 {
                self.bad(
                    at,
                    format!(
                        "sequence {} has a negative length {len}",
                        (at - IDX_HEADER) / 4
                    ),
                );
            }
            self.sizes_hash = self
                .sizes_hash
                .wrapping_add(self.weight.wrapping_mul(self.sum as u64));
            self.weight = self.weight.wrapping_mul(HASH_BASE);
            self.sum = self.sum.wrapping_add(i64::from(len) * dtype.size() as i64);
        } else if at < pointers_end {
            let k = (at - sizes_end) / 8;
            let p = i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            if k == 0 && p != 0 {
                self.bad(at, format!("the first pointer is {p}, not 0"));
            } else if p < self.last_pointer {
                self.bad(
                    at,
                    format!(
                        "pointer {k} ({p}) is below the one before ({})",
                        self.last_pointer
                    ),
                );
            }
            self.last_pointer = p;
            self.pointers_hash = self
                .pointers_hash
                .wrapping_add(self.pointer_weight.wrapping_mul(p as u64));
            self.pointer_weight = self.pointer_weight.wrapping_mul(HASH_BASE);
        } else if at < pointers_end + 8 * d {
            let k = (at - pointers_end) / 8;
            let b = i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            if k == 0 && b != 0 {
                self.bad(at, format!("the first document boundary is {b}, not 0"));
            } else if b < self.last_boundary {
                self.bad(at, format!("document boundary {k} ({b}) is below the one before ({}): document indices must not decrease", self.last_boundary));
            } else if b as u64 > s {
                self.bad(
                    at,
                    format!("document boundary {k} ({b}) is past the {s} sequences"),
                );
            }
            if k + 1 == d && b as u64 != s {
                self.bad(
                    at,
                    format!("the last document boundary is {b}, not the sequence count {s}"),
                );
            }
            self.last_boundary = b;
        }
    }
}

impl Inspector for IdxInspector {
    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.offset < IDX_HEADER {
                let take = ((IDX_HEADER - self.offset) as usize).min(data.len());
                self.head.extend_from_slice(&data[..take]);
                data = &data[take..];
                self.offset += take as u64;
                if self.offset == IDX_HEADER {
                    match parse_idx_header(&self.head) {
                        Ok(h) => self.header = Some(h),
                        Err(reason) => {
                            self.findings.push(
                                Finding::error(
                                    FindingKind::BadHeader,
                                    &self.path,
                                    reason.to_string(),
                                )
                                .at(0),
                            );
                            self.offset = u64::MAX / 2;
                        }
                    }
                }
                continue;
            }
            let Some((_, s, _)) = self.header else {
                self.offset = self.offset.saturating_add(data.len() as u64);
                return;
            };
            let width = if self.offset < IDX_HEADER + 4 * s {
                4
            } else {
                8
            };
            let need = width - self.word.len();
            let take = need.min(data.len());
            self.word.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.word.len() == width {
                let at = self.offset + take as u64 - width as u64;
                let word = std::mem::take(&mut self.word);
                self.element(at, &word);
                self.word = word;
                self.word.clear();
            }
            self.offset += take as u64;
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        let mut facts = BTreeMap::new();
        if let Some((dtype, s, d)) = self.header {
            let expected = IDX_HEADER + 12 * s + 8 * d;
            let size = self.offset;
            if size < expected {
                self.findings.push(
                    Finding::error(
                        FindingKind::Truncated,
                        &self.path,
                        "the index ends before the arrays its header counts",
                    )
                    .at(size)
                    .values(expected, size),
                );
            } else if size > expected {
                self.findings.push(
                    Finding::error(
                        FindingKind::TrailingData,
                        &self.path,
                        "bytes after the arrays the header counts",
                    )
                    .range(expected, size)
                    .values(expected, size),
                );
            } else if self.sizes_hash != self.pointers_hash {
                self.findings.push(Finding::error(
                    FindingKind::BadIndex,
                    &self.path,
                    "the sequence pointers are not the running sum of the lengths × the item size",
                ).at(IDX_HEADER + 4 * s));
            }
            facts.insert("bin_bytes".into(), Value::from(self.sum));
            facts.insert("sequences".into(), Value::from(s));
            facts.insert("documents".into(), Value::from(d.saturating_sub(1)));
            facts.insert("dtype".into(), Value::from(dtype.name()));
        } else if self.offset < IDX_HEADER {
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    &self.path,
                    "shorter than the 34-byte Megatron index header",
                )
                .at(self.offset),
            );
        }
        Inspection {
            format: "megatron".into(),
            facts,
            findings: self.findings,
            ..Inspection::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspect(bytes: &[u8], block: usize) -> Inspection {
        let mut inspector = Box::new(IdxInspector::new("t.idx".into()));
        for chunk in bytes.chunks(block) {
            inspector.update(chunk);
        }
        inspector.finish()
    }

    /// Found by fuzzing (`megatron_idx`): a header whose counts describe arrays larger
    /// than 2^64 bytes made the offset arithmetic overflow (a panic in debug builds,
    /// wrong offsets in release).
    #[test]
    fn counts_no_index_can_hold_are_a_bad_header() {
        let bytes = b"MMIDIDX\0\0\x01\0\0\0\0\0\0\0\x08\x04\0\0\0\0\0\xff\xff\0\x02\0\0\0\0\0\0\0\x03\0\0\x000\0\0\0\x04\0\0\0\0\0\0\0";
        for block in [1, 7, bytes.len()] {
            let inspection = inspect(bytes, block);
            assert!(
                inspection
                    .findings
                    .iter()
                    .any(|f| f.kind == FindingKind::BadHeader
                        && f.message.contains("no index can hold that many")),
                "{:?}",
                inspection.findings
            );
            assert!(inspection.facts.is_empty());
        }
    }
}
