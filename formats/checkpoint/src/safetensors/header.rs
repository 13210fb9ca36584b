//! The header of a safetensors file: its length, its JSON, the tensors it declares and
//! whether their byte ranges tile the data exactly (the reference reader's checks).

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind};

use crate::values::TensorDtype;

/// Largest header the reference reader accepts (`MAX_HEADER_SIZE`, decimal bytes).
pub const MAX_HEADER: u64 = 100_000_000;

/// One tensor as the header declares it (offsets absolute in the file).
#[derive(Clone, Debug)]
pub(super) struct Tensor {
    pub(super) name: String,
    pub(super) dtype: Option<TensorDtype>,
    pub(super) dtype_name: String,
    /// Shape as declared (C order): rows for the zero-run judgement.
    pub(super) shape: Vec<u64>,
    pub(super) start: u64,
    pub(super) end: u64,
}

/// Why a header length `n` in a file of `size` bytes is not one a reader accepts.
pub(super) fn length_problem(n: u64, size: u64) -> Option<String> {
    if n > MAX_HEADER {
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
    }
}

/// A header judged.
pub(super) struct Header {
    /// The tensors by byte range, when their ranges and sizes are sound (else none:
    /// the data is not scanned).
    pub tensors: Vec<Tensor>,
    /// Every tensor's name, in the header's order.
    pub names: Vec<String>,
    /// Where the last tensor ends.
    pub data_end: u64,
}

/// The header (the JSON after the length) of the file at `path` judged, its findings
/// pushed to `findings`; `None` when it is not JSON (the rest is not read).
pub(super) fn judge(path: &str, header: &[u8], findings: &mut Vec<Finding>) -> Option<Header> {
    let data_start = 8 + header.len() as u64;
    let parsed: Result<serde_json::Map<String, Value>, _> = serde_json::from_slice(header);
    let map = match parsed {
        Ok(map) => map,
        Err(e) => {
            let f = Finding::error(
                FindingKind::BadHeader,
                path,
                format!(
                    "header is not valid JSON (\"invalid JSON in header\"): {e}; first bytes {:?}",
                    String::from_utf8_lossy(&header[..header.len().min(24)])
                ),
            )
            .range(8, data_start);
            findings.push(f);
            return None;
        }
    };
    let mut check = Check { path, findings };
    let mut tensors = check.declared(&map, data_start);
    let names = tensors.iter().map(|t| t.name.clone()).collect();
    tensors.sort_by_key(|t| (t.start, t.end));
    let (contiguous, data_end) = check.check_ranges(&tensors, data_start);
    check.warn_unknown_dtypes(&tensors);
    let sized = check.check_sizes(&map, &tensors);
    if !(contiguous && sized) {
        tensors.clear();
    }
    Some(Header {
        tensors,
        names,
        data_end,
    })
}

/// The findings of one header, as they are made.
struct Check<'a> {
    path: &'a str,
    findings: &'a mut Vec<Finding>,
}

impl Check<'_> {
    /// The tensors the header declares (in its order); a finding for each entry that is
    /// no tensor and for a `__metadata__` that is not strings to strings.
    fn declared(&mut self, map: &serde_json::Map<String, Value>, data_start: u64) -> Vec<Tensor> {
        let mut tensors = Vec::new();
        for (name, value) in map {
            if name == "__metadata__" {
                let ok = value
                    .as_object()
                    .is_some_and(|m| m.values().all(Value::is_string));
                if !ok {
                    let f = Finding::error(
                        FindingKind::BadHeader,
                        self.path,
                        "`__metadata__` must map strings to strings (readers reject it)",
                    );
                    self.findings.push(f.range(8, data_start));
                }
                continue;
            }
            match parse_tensor(name, value, data_start) {
                Ok(t) => tensors.push(t),
                Err(why) => {
                    let f = Finding::error(
                        FindingKind::BadHeader,
                        self.path,
                        format!("tensor `{name}`: {why}"),
                    );
                    self.findings.push(f.range(8, data_start));
                }
            }
        }
        tensors
    }

    /// Findings of byte ranges (sorted by start) that leave a gap, overlap or run
    /// backwards; whether none did, and where the data ends.
    fn check_ranges(&mut self, tensors: &[Tensor], data_start: u64) -> (bool, u64) {
        let mut layout_ok = true;
        let mut expect = data_start;
        for t in tensors {
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
                    self.path,
                    format!("tensor `{}`: {why}", t.name),
                )
                .range(t.start, t.end.max(t.start));
                self.findings.push(f);
            }
            expect = expect.max(t.end);
        }
        (layout_ok, expect)
    }

    /// A warning for each tensor whose dtype this reader does not know.
    fn warn_unknown_dtypes(&mut self, tensors: &[Tensor]) {
        for t in tensors {
            if t.dtype.is_none() {
                let f = Finding::warning(
                    FindingKind::UnsupportedDtype,
                    self.path,
                    format!(
                        "tensor `{}` has dtype `{}`, which this reader does not know (a newer writer?); its size was not checked",
                        t.name, t.dtype_name
                    ),
                );
                self.findings.push(f.range(t.start, t.end.max(t.start)));
            }
        }
    }

    /// Findings of tensors whose byte range does not match shape × dtype size (in the
    /// header's order); whether every one matched.
    fn check_sizes(&mut self, map: &serde_json::Map<String, Value>, tensors: &[Tensor]) -> bool {
        let mut sized = true;
        for (name, value) in map.iter().filter(|(n, _)| *n != "__metadata__") {
            if let Some(why) = size_problem(value) {
                sized = false;
                let t = tensors.iter().find(|t| &t.name == name);
                let mut f = Finding::error(
                    FindingKind::BadTensor,
                    self.path,
                    format!("tensor `{name}`: {why} (\"invalid shape, data type, or offset\")"),
                );
                if let Some(t) = t {
                    f = f.range(t.start, t.end.max(t.start));
                }
                self.findings.push(f);
            }
        }
        sized
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
