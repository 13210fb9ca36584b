//! Files that are pickles: DCP `.metadata` and arbitrary pickles (legacy torch files
//! are read by [`crate::legacy`]). Read without executing; their globals judged.

use serde_json::json;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::dcp_coverage;
use super::pickle;
use super::report;
use super::torch::{self, Reader};

/// Longest pickle file read into memory (a DCP `.metadata` of a large model is MBs).
pub const MAX_PICKLE_FILE: u64 = 256 << 20;

/// What kind of pickle file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickleKind {
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
                PickleKind::DcpMetadata => "dcp_metadata",
                PickleKind::Plain => "pickle",
            }
            .into(),
            ..Inspection::default()
        };
        let findings = &mut inspection.findings;
        let p = match pickle::parse(&self.buf) {
            Ok(p) => p,
            Err(e) => {
                let mut f = bad(path, &e);
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
        // DCP reads its `.metadata` with pickle.load; other pickles are read so too.
        report::global_findings(findings, path, "the pickle", &c, Reader::Pickle);
        match self.kind {
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

fn bad(path: &str, e: &pickle::PickleError) -> Finding {
    Finding::error(
        FindingKind::BadPickle,
        path,
        format!("the pickle cannot be read: {}", e.reason),
    )
    .at(e.at as u64)
}
