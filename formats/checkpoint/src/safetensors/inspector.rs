//! The streaming checker of a safetensors file: the header read and judged
//! ([`super::header`]), then each tensor's bytes scanned as they pass, then the file's
//! length held against where the tensors end.

use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::header::{self, Tensor};
use crate::content::TensorScan;
use crate::report::{self, Settings};

enum State {
    Length(Vec<u8>),
    Header(Vec<u8>, usize),
    Data,
    Stopped,
}

/// Streaming checker of one safetensors file.
pub struct SafetensorsInspector {
    path: String,
    settings: Settings,
    pos: u64,
    state: State,
    tensors: Vec<Tensor>,
    names: Vec<String>,
    cur: usize,
    scan: Option<TensorScan>,
    data_end: Option<u64>,
    /// File offset of this file's first byte (a blob inside a DCP file).
    base: u64,
    findings: Vec<Finding>,
}

impl SafetensorsInspector {
    /// A checker for the file at `path` (used in findings).
    pub fn new(path: &str, settings: Settings) -> Self {
        Self {
            path: path.to_string(),
            settings,
            pos: 0,
            state: State::Length(Vec::with_capacity(8)),
            tensors: Vec::new(),
            names: Vec::new(),
            cur: 0,
            scan: None,
            data_end: None,
            base: 0,
            findings: Vec::new(),
        }
    }

    /// The same checker, for a file that starts `base` bytes into the file read (a DCP
    /// safetensors blob): offsets stay relative, 4 KiB blocks are the real file's.
    pub fn at_file_offset(mut self, base: u64) -> Self {
        self.base = base;
        self
    }

    fn new_scan(&self, t: &Tensor, scan_values: bool) -> TensorScan {
        TensorScan::new(t.start, t.dtype, scan_values)
            .with_shape(&t.shape, true)
            .at_file_offset(self.base)
    }

    fn on_length(&mut self, bytes: &[u8]) {
        let n = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        match header::length_problem(n, self.settings.size) {
            Some(message) => {
                let f = self.error(FindingKind::BadHeader, message).range(0, 8);
                self.findings.push(f);
                self.state = State::Stopped;
            }
            None => {
                let n = usize::try_from(n).expect("at most MAX_HEADER");
                self.state = State::Header(Vec::with_capacity(n), n);
            }
        }
    }

    fn on_header(&mut self, header: &[u8]) {
        match header::judge(&self.path, header, &mut self.findings) {
            Some(judged) => {
                self.names = judged.names;
                self.data_end = Some(judged.data_end);
                self.tensors = judged.tensors;
                self.state = State::Data;
            }
            None => self.state = State::Stopped,
        }
    }

    fn error(&self, kind: FindingKind, message: String) -> Finding {
        Finding::error(kind, &self.path, message)
    }

    fn on_data(&mut self, mut data: &[u8]) {
        let mut pos = self.pos;
        while !data.is_empty() {
            let Some(t) = self.tensors.get(self.cur) else {
                return;
            };
            if pos >= t.end {
                self.end_tensor();
                continue;
            }
            if pos < t.start {
                let skip = (t.start - pos).min(data.len() as u64) as usize;
                data = &data[skip..];
                pos += skip as u64;
                continue;
            }
            let take = (t.end - pos).min(data.len() as u64) as usize;
            if self.scan.is_none() {
                self.scan = Some(self.new_scan(t, self.settings.scan_values));
            }
            if let Some(scan) = self.scan.as_mut() {
                scan.update(&data[..take]);
            }
            data = &data[take..];
            pos += take as u64;
        }
    }

    fn end_tensor(&mut self) {
        let t = &self.tensors[self.cur];
        let mut scan = self.scan.take().unwrap_or_else(|| self.new_scan(t, false));
        scan.finish();
        let what = format!("tensor `{}` ({} {:?})", t.name, t.dtype_name, t.shape);
        report::content_findings(
            &mut self.findings,
            &self.path,
            &what,
            &scan,
            &self.settings.holes,
        );
        self.cur += 1;
    }
}

impl Inspector for SafetensorsInspector {
    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match &mut self.state {
                State::Length(buf) => {
                    let take = (8 - buf.len()).min(data.len());
                    buf.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    self.pos += take as u64;
                    if buf.len() == 8 {
                        let bytes = std::mem::take(buf);
                        self.on_length(&bytes);
                    }
                }
                State::Header(buf, need) => {
                    let take = (*need - buf.len()).min(data.len());
                    buf.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    self.pos += take as u64;
                    if buf.len() == *need {
                        let header = std::mem::take(buf);
                        self.on_header(&header);
                    }
                }
                State::Data => {
                    self.on_data(data);
                    self.pos += data.len() as u64;
                    return;
                }
                State::Stopped => {
                    self.pos += data.len() as u64;
                    return;
                }
            }
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        match self.state {
            State::Length(_) => {
                let f = self.error(
                    FindingKind::Truncated,
                    format!(
                        "only {} bytes: a safetensors file starts with an 8-byte header length (\"header too small\")",
                        self.pos
                    ),
                );
                self.findings.push(f.at(0));
            }
            State::Header(..) => {} // reported by on_length (runs past the end)
            State::Data => {
                while self.cur < self.tensors.len() && self.tensors[self.cur].start < self.pos {
                    self.end_tensor();
                }
                let expected = self.data_end.unwrap_or(self.pos);
                let size = self.pos;
                if size < expected {
                    let f = self.error(
                        FindingKind::Truncated,
                        format!(
                            "the file ends at byte {size} but its tensors end at {expected}: truncated (\"incomplete metadata, file not fully covered\")"
                        ),
                    );
                    self.findings
                        .push(f.range(size, expected).values(expected, size));
                } else if size > expected {
                    let f = self.error(
                        FindingKind::TrailingData,
                        format!(
                            "{} bytes after the last tensor: readers reject the file (\"incomplete metadata, file not fully covered\")",
                            size - expected
                        ),
                    );
                    self.findings
                        .push(f.range(expected, size).values(expected, size));
                }
            }
            State::Stopped => {}
        }
        let mut inspection = Inspection {
            format: "safetensors".into(),
            findings: self.findings,
            ..Inspection::default()
        };
        inspection
            .facts
            .insert("tensors".into(), serde_json::json!(self.names));
        inspection
    }
}
