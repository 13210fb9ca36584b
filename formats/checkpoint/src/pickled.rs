//! Files that are pickles: legacy (pre-1.6, non-zip) torch checkpoints, DCP
//! `.metadata`, and arbitrary pickles. Read without executing; their globals judged.

use serde_json::json;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::dcp_coverage;
use super::pickle;
use super::report;
use super::torch;

/// Longest pickle file read into memory (a DCP `.metadata` of a large model is MBs).
pub const MAX_PICKLE_FILE: u64 = 256 << 20;

/// Magic number a legacy torch file starts with (`PROTO 2`, `LONG1` 0x1950a86a20f9469cfc6c).
pub const LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19";

/// What kind of pickle file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickleKind {
    /// Legacy torch serialization.
    LegacyTorch,
    /// A DCP `.metadata`.
    DcpMetadata,
    /// Any other pickle.
    Plain,
}

/// Buffers a pickle file (bounded) and reads it at the end.
pub struct PickleInspector {
    path: String,
    kind: PickleKind,
    buf: Vec<u8>,
    len: u64,
}

impl PickleInspector {
    /// A reader for the pickle file at `path`.
    pub fn new(path: &str, kind: PickleKind) -> Self {
        Self {
            path: path.to_string(),
            kind,
            buf: Vec::new(),
            len: 0,
        }
    }
}

impl Inspector for PickleInspector {
    fn update(&mut self, data: &[u8]) {
        self.len += data.len() as u64;
        let room = MAX_PICKLE_FILE.saturating_sub(self.buf.len() as u64) as usize;
        self.buf.extend_from_slice(&data[..data.len().min(room)]);
    }

    fn finish(self: Box<Self>) -> Inspection {
        let path = self.path.as_str();
        let mut inspection = Inspection {
            format: match self.kind {
                PickleKind::LegacyTorch => "torch_legacy",
                PickleKind::DcpMetadata => "dcp_metadata",
                PickleKind::Plain => "pickle",
            }
            .into(),
            ..Inspection::default()
        };
        let findings = &mut inspection.findings;
        let mut data = &self.buf[..];
        let mut offset = 0u64;
        if self.kind == PickleKind::LegacyTorch {
            // magic number, protocol version, sys_info: three small pickles first.
            for _ in 0..3 {
                match pickle::parse(data) {
                    Ok(p) => {
                        data = &data[p.len..];
                        offset += p.len as u64;
                    }
                    Err(e) => {
                        findings.push(bad(path, offset, &e));
                        return inspection;
                    }
                }
            }
        }
        let p = match pickle::parse(data) {
            Ok(p) => p,
            Err(e) => {
                let mut f = bad(path, offset, &e);
                if self.len > MAX_PICKLE_FILE {
                    f.message.push_str(&format!(
                        " (only the first {MAX_PICKLE_FILE} bytes were read)"
                    ));
                }
                findings.push(f);
                return inspection;
            }
        };
        let c = torch::contents(&p);
        report::global_findings(findings, path, "the pickle", &c);
        match self.kind {
            PickleKind::LegacyTorch => findings.push(Finding::warning(
                FindingKind::LegacyFormat,
                path,
                format!(
                    "legacy (pre-1.6, non-zip) torch serialization: {} tensor(s) in {} storage(s) listed; it carries no checksums, so damage to tensor bytes cannot be detected without a manifest (re-save with torch.save)",
                    c.tensors,
                    c.storages.len()
                ),
            )),
            PickleKind::DcpMetadata => {
                let items: Vec<_> = torch::dcp_storage(&p)
                    .into_iter()
                    .map(|(fqn, rel, off, len)| json!([fqn, rel, off, len]))
                    .collect();
                inspection.facts.insert("dcp.storage".into(), json!(items));
                inspection.findings.extend(dcp_coverage::check(&p, path));
            }
            PickleKind::Plain => {}
        }
        inspection.facts.insert("tensors".into(), json!(c.names));
        for (k, v) in c.facts {
            inspection.facts.insert(k, v);
        }
        inspection
    }
}

fn bad(path: &str, offset: u64, e: &pickle::PickleError) -> Finding {
    Finding::error(
        FindingKind::BadPickle,
        path,
        format!("the pickle cannot be read: {}", e.reason),
    )
    .at(offset + e.at as u64)
}
