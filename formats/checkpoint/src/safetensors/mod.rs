//! safetensors: every check the reference reader makes (header length bounds, JSON,
//! dtypes, shape × dtype size = byte range, ranges contiguous, in bounds and
//! non-overlapping, file length exact), then the content checks of each tensor's bytes,
//! all during the single read that hashes the file.

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::content::TensorScan;
use super::report::{self, Settings};
use super::values::TensorDtype;

/// Largest header the reference reader accepts (`MAX_HEADER_SIZE`, decimal bytes).
pub const MAX_HEADER: u64 = 100_000_000;

/// One tensor as the header declares it (offsets absolute in the file).
#[derive(Clone, Debug)]
struct Tensor {
    name: String,
    dtype: Option<TensorDtype>,
    dtype_name: String,
    /// Shape as declared (C order): rows for the zero-run judgement.
    shape: Vec<u64>,
    start: u64,
    end: u64,
}

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

    fn error(&self, kind: FindingKind, message: String) -> Finding {
        Finding::error(kind, &self.path, message)
    }

    fn on_length(&mut self, bytes: &[u8]) {
        let n = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        let size = self.settings.size;
        let finding = if n > MAX_HEADER {
            Some(format!(
                "header length {n} exceeds the {MAX_HEADER}-byte limit of safetensors readers (\"header too large\"): not a safetensors file, or its first 8 bytes are damaged"
            ))
        } else if n < 2 {
            Some(format!(
                "header length {n} is too small for a JSON header: the first 8 bytes are damaged or zeroed"
            ))
        } else if 8 + n > size {
            Some(format!(
                "header length {n} runs past the end of the {size}-byte file (\"invalid header length\")"
            ))
        } else {
            None
        };
        match finding {
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
        let data_start = 8 + header.len() as u64;
        let parsed: Result<serde_json::Map<String, Value>, _> = serde_json::from_slice(header);
        let map = match parsed {
            Ok(map) => map,
            Err(e) => {
                let f = self
                    .error(
                        FindingKind::BadHeader,
                        format!(
                            "header is not valid JSON (\"invalid JSON in header\"): {e}; first bytes {:?}",
                            String::from_utf8_lossy(&header[..header.len().min(24)])
                        ),
                    )
                    .range(8, data_start);
                self.findings.push(f);
                self.state = State::Stopped;
                return;
            }
        };
        let mut tensors = Vec::new();
        for (name, value) in &map {
            if name == "__metadata__" {
                let ok = value
                    .as_object()
                    .is_some_and(|m| m.values().all(Value::is_string));
                if !ok {
                    let f = self.error(
                        FindingKind::BadHeader,
                        "`__metadata__` must map strings to strings (readers reject it)".into(),
                    );
                    self.findings.push(f.range(8, data_start));
                }
                continue;
            }
            match parse_tensor(name, value, data_start) {
                Ok(t) => tensors.push(t),
                Err(why) => {
                    let f = self.error(FindingKind::BadHeader, format!("tensor `{name}`: {why}"));
                    self.findings.push(f.range(8, data_start));
                }
            }
        }
        self.names = tensors.iter().map(|t| t.name.clone()).collect();
        tensors.sort_by_key(|t| (t.start, t.end));
        let mut layout_ok = true;
        let mut expect = data_start;
        for t in &tensors {
            let problem = if t.end < t.start {
                Some("its data_offsets end before they begin".to_string())
            } else if t.start > expect {
                Some(format!(
                    "a gap of {} bytes before it: no tensor covers bytes {expect}..{} (\"invalid offset\")",
                    t.start - expect,
                    t.start
                ))
            } else if t.start < expect {
                Some(format!(
                    "it overlaps the previous tensor by {} bytes (\"invalid offset\")",
                    expect - t.start
                ))
            } else {
                None
            };
            if let Some(why) = problem {
                layout_ok = false;
                let f = Finding::error(
                    FindingKind::BadTensor,
                    &self.path,
                    format!("tensor `{}`: {why}", t.name),
                )
                .range(t.start, t.end.max(t.start));
                self.findings.push(f);
            }
            expect = expect.max(t.end);
        }
        for t in &tensors {
            if t.dtype.is_none() {
                let f = Finding::warning(
                    FindingKind::UnsupportedDtype,
                    &self.path,
                    format!(
                        "tensor `{}` has dtype `{}`, which this reader does not know (a newer writer?); its size was not checked",
                        t.name, t.dtype_name
                    ),
                );
                self.findings.push(f.range(t.start, t.end.max(t.start)));
            }
        }
        for (name, value) in map.iter().filter(|(n, _)| *n != "__metadata__") {
            if let Some(why) = size_problem(value) {
                layout_ok = false;
                let t = tensors.iter().find(|t| &t.name == name);
                let mut f = Finding::error(
                    FindingKind::BadTensor,
                    &self.path,
                    format!("tensor `{name}`: {why} (\"invalid shape, data type, or offset\")"),
                );
                if let Some(t) = t {
                    f = f.range(t.start, t.end.max(t.start));
                }
                self.findings.push(f);
            }
        }
        self.data_end = Some(expect);
        if layout_ok {
            self.tensors = tensors;
        }
        self.state = State::Data;
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

fn parse_tensor(name: &str, value: &Value, data_start: u64) -> Result<Tensor, &'static str> {
    let obj = value.as_object().ok_or("is not a JSON object")?;
    let dtype_name = obj
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or("has no string `dtype`")?;
    let offsets = obj
        .get("data_offsets")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 2)
        .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)))
        .ok_or("`data_offsets` is not two unsigned integers")?;
    let shape = obj
        .get("shape")
        .and_then(Value::as_array)
        .and_then(|dims| dims.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
        .ok_or("`shape` is not a list of unsigned integers")?;
    let abs = |o: u64| data_start.checked_add(o).ok_or("offset overflows");
    Ok(Tensor {
        name: name.to_string(),
        dtype: TensorDtype::from_safetensors(dtype_name),
        dtype_name: dtype_name.to_string(),
        shape,
        start: abs(offsets.0)?,
        end: abs(offsets.1)?,
    })
}

/// Why a tensor's byte range does not match its shape and dtype, if it does not.
fn size_problem(value: &Value) -> Option<String> {
    let obj = value.as_object()?;
    let dtype = TensorDtype::from_safetensors(obj.get("dtype")?.as_str()?)?;
    let offsets = obj.get("data_offsets")?.as_array()?;
    let (begin, end) = (offsets.first()?.as_u64()?, offsets.get(1)?.as_u64()?);
    let dims: Vec<u64> = obj
        .get("shape")?
        .as_array()?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<_>>()?;
    let shape = format!("{dims:?}");
    let bits = dims
        .iter()
        .try_fold(dtype.bits(), |acc, &d| acc.checked_mul(d));
    let Some(bits) = bits else {
        return Some(format!("shape {shape} overflows when sized"));
    };
    if bits % 8 != 0 {
        return Some(format!(
            "shape {shape} of a {}-bit dtype is not a whole number of bytes",
            dtype.bits()
        ));
    }
    let want = bits / 8;
    let have = end.saturating_sub(begin);
    (end >= begin && want != have)
        .then(|| format!("shape {shape} needs {want} bytes but its data_offsets span {have}"))
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

/// True when `head` starts a safetensors file of `size` bytes: a plausible header
/// length, then JSON.
pub(crate) fn is_safetensors(head: &[u8], size: u64) -> bool {
    if head.len() < 10 {
        return false;
    }
    let n = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let body = &head[8..];
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    (2..=MAX_HEADER).contains(&n) && 8 + n <= size && first == Some(&b'{')
}

#[cfg(test)]
mod tests;
