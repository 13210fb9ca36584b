//! `verify` of a legacy torch file in its one sequential read: the pickles are buffered
//! until they parse (tried at doubling sizes, so the work stays linear), then the
//! storages are walked as their bytes stream past, nothing more kept.

use serde_json::json;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::head::{Head, HeadError, head, head_findings};
use super::walk::Walk;
use crate::pickle_inspector::MAX_PICKLE_FILE;
use crate::report;
use crate::torch::Reader;

/// First size at which the pickles are tried.
const FIRST_TRY: usize = 64 << 10;

/// Streaming checker of a legacy torch file.
pub struct LegacyInspector {
    path: String,
    buf: Vec<u8>,
    next_try: usize,
    len: u64,
    read: Option<(Head, Walk)>,
    failed: Option<HeadError>,
}

impl LegacyInspector {
    /// A checker for the legacy torch file at `path`.
    pub fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            buf: Vec::new(),
            next_try: FIRST_TRY,
            len: 0,
            read: None,
            failed: None,
        }
    }

    /// Tries the pickles on what was buffered; `last` when no more bytes come.
    fn try_head(&mut self, last: bool) {
        match head(&self.buf) {
            Ok(h) => {
                let mut walk = Walk::new(&h);
                walk.feed(&self.buf[h.end as usize..]);
                self.read = Some((h, walk));
                self.buf = Vec::new();
            }
            Err(e) if e.truncated() && !last && (self.buf.len() as u64) < MAX_PICKLE_FILE => {
                self.next_try = self.buf.len().saturating_mul(2);
            }
            Err(e) => {
                self.failed = Some(e);
                self.buf = Vec::new();
            }
        }
    }
}

impl Inspector for LegacyInspector {
    fn update(&mut self, data: &[u8]) {
        self.len += data.len() as u64;
        if let Some((_, walk)) = &mut self.read {
            walk.feed(data);
            return;
        }
        if self.failed.is_some() {
            return;
        }
        let room = MAX_PICKLE_FILE.saturating_sub(self.buf.len() as u64) as usize;
        let kept = data.len().min(room);
        self.buf.extend_from_slice(&data[..kept]);
        if self.buf.len() >= self.next_try || kept < data.len() {
            self.try_head(false);
            // Bytes past the buffer's limit, once the pickles were read.
            if let Some((_, walk)) = &mut self.read {
                walk.feed(&data[kept..]);
            }
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        if self.read.is_none() && self.failed.is_none() {
            self.try_head(true);
        }
        let path = self.path.as_str();
        let mut inspection = Inspection {
            format: "torch_legacy".into(),
            ..Inspection::default()
        };
        let findings = &mut inspection.findings;
        let Some((head, walk)) = self.read.take() else {
            let e = self.failed.take().expect("tried above");
            let mut message = format!("legacy torch file: {}", e.message());
            if self.len > MAX_PICKLE_FILE && e.truncated() {
                message.push_str(&format!(
                    " (only the first {MAX_PICKLE_FILE} bytes were read)"
                ));
            }
            let kind = match e {
                HeadError::Pickle { .. } => FindingKind::BadPickle,
                HeadError::Structure { .. } => FindingKind::BadHeader,
            };
            findings.push(Finding::error(kind, path, message).at(e.at()));
            return inspection;
        };
        let c = &head.contents;
        report::global_findings(findings, path, "the pickle", c, Reader::WeightsOnly);
        report::view_findings(findings, path, c);
        findings.extend(head_findings(path, &head));
        if head.big_endian {
            findings.push(Finding::warning(
                FindingKind::ForeignByteOrder,
                path,
                "saved on a big-endian machine: torch byte-swaps on load; other readers must too",
            ));
        }
        let (_, problems) = walk.finish(self.len);
        findings.extend(problems.iter().map(|p| p.finding(path, self.len)));
        findings.push(Finding::warning(
            FindingKind::LegacyFormat,
            path,
            format!(
                "legacy (pre-1.6, non-zip) torch serialization: {} tensor(s) in {} storage(s) listed; it carries no checksums, so damage to tensor bytes cannot be detected without a manifest (re-save with torch.save)",
                c.tensors,
                c.storages.len()
            ),
        ));
        inspection.facts.insert("tensors".into(), json!(c.names));
        for (k, v) in &c.facts {
            inspection.facts.insert(k.clone(), v.clone());
        }
        inspection
    }
}
