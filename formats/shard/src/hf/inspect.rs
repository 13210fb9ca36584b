//! Verifying the Arrow IPC stream of a Hugging Face shard as its bytes stream past:
//! every message's continuation marker, metadata length and metadata (a flatbuffer
//! `Message`, the schema first, then record batches or dictionaries), its body length
//! against the bytes left, and the end-of-stream marker, with nothing after it. The
//! rows of the record batches are counted.

use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

/// The largest message metadata accepted (a schema of thousands of columns is far less).
const MAX_METADATA: u32 = 64 << 20;
const CONTINUATION: [u8; 4] = [0xff; 4];

enum State {
    /// Reading the 8-byte prefix of the next message (continuation, metadata length).
    Prefix,
    /// Reading this many bytes of metadata.
    Metadata(usize),
    /// Skipping this many body bytes.
    Body(u64),
    /// After the end marker.
    Ended,
    /// A finding stopped the check.
    Failed,
    /// An Arrow IPC *file* (`ARROW1` magic, another tool's), which this checker does not
    /// walk.
    IpcFile,
}

/// Structural checker of one `.arrow` stream file.
pub struct HfInspector {
    path: String,
    state: State,
    buf: Vec<u8>,
    /// Bytes seen so far, and where the current message starts.
    offset: u64,
    message_start: u64,
    messages: u64,
    rows: u64,
    findings: Vec<Finding>,
}

impl HfInspector {
    /// A checker for the file at `path` (relative to the checked directory).
    pub fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            state: State::Prefix,
            buf: Vec::new(),
            offset: 0,
            message_start: 0,
            messages: 0,
            rows: 0,
            findings: Vec::new(),
        }
    }

    fn fail(&mut self, kind: FindingKind, at: u64, message: String) {
        self.findings
            .push(Finding::error(kind, &self.path, message).at(at));
        self.state = State::Failed;
    }

    /// Checks the metadata of message `self.messages`; the next state.
    fn metadata(&mut self, meta: &[u8]) -> State {
        let at = self.message_start;
        let message = match arrow_ipc::root_as_message(meta) {
            Ok(m) => m,
            Err(e) => {
                self.fail(
                    FindingKind::BadHeader,
                    at,
                    format!("message {} has unreadable metadata: {e}", self.messages),
                );
                return State::Failed;
            }
        };
        let header = message.header_type();
        let first = self.messages == 0;
        if first != (header == arrow_ipc::MessageHeader::Schema) {
            self.fail(
                FindingKind::BadHeader,
                at,
                format!(
                    "message {} is a {header:?}; an Arrow stream starts with its schema, once",
                    self.messages
                ),
            );
            return State::Failed;
        }
        if let Some(batch) = message.header_as_record_batch() {
            self.rows += batch.length().max(0) as u64;
        }
        self.messages += 1;
        match u64::try_from(message.bodyLength()) {
            Ok(0) => State::Prefix,
            Ok(n) => State::Body(n),
            Err(_) => {
                self.fail(
                    FindingKind::BadHeader,
                    at,
                    "a message has a negative body length".into(),
                );
                State::Failed
            }
        }
    }
}

impl Inspector for HfInspector {
    fn update(&mut self, mut data: &[u8]) {
        if self.offset == 0 && data.starts_with(b"ARROW1") {
            self.state = State::IpcFile;
        }
        while !data.is_empty() {
            match self.state {
                State::Failed | State::IpcFile => return,
                State::Ended => {
                    let at = self.offset;
                    self.fail(
                        FindingKind::TrailingData,
                        at,
                        format!(
                            "{} bytes or more after the end-of-stream marker",
                            data.len()
                        ),
                    );
                    return;
                }
                State::Body(left) => {
                    let n = left.min(data.len() as u64);
                    data = &data[n as usize..];
                    self.offset += n;
                    self.state = if n == left {
                        State::Prefix
                    } else {
                        State::Body(left - n)
                    };
                }
                State::Prefix | State::Metadata(_) => {
                    let want = match self.state {
                        State::Metadata(n) => n,
                        _ => 8,
                    };
                    let n = (want - self.buf.len()).min(data.len());
                    self.buf.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    self.offset += n as u64;
                    if self.buf.len() < want {
                        continue;
                    }
                    let buf = std::mem::take(&mut self.buf);
                    self.state = match self.state {
                        State::Metadata(_) => self.metadata(&buf),
                        _ => {
                            let at = self.offset - 8;
                            self.message_start = at;
                            let length = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
                            if buf[..4] != CONTINUATION {
                                self.fail(FindingKind::BadHeader, at, "a message does not start with the continuation marker 0xFFFFFFFF".into());
                                State::Failed
                            } else if length == 0 {
                                State::Ended
                            } else if length > MAX_METADATA || length % 8 != 0 {
                                self.fail(FindingKind::BadHeader, at, format!("a message's metadata length {length} is not a multiple of 8 up to {MAX_METADATA}"));
                                State::Failed
                            } else {
                                State::Metadata(length as usize)
                            }
                        }
                    };
                }
            }
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        match self.state {
            State::Prefix if self.buf.is_empty() => {
                let at = self.offset;
                self.fail(
                    FindingKind::MissingEndMarker,
                    at,
                    "the Arrow stream has no end-of-stream marker".into(),
                );
            }
            State::Prefix | State::Metadata(_) | State::Body(_) => {
                let at = self.message_start;
                self.fail(
                    FindingKind::Truncated,
                    at,
                    format!(
                        "the file ends inside message {} of the Arrow stream",
                        self.messages
                    ),
                );
            }
            State::IpcFile => self.findings.push(Finding::warning(
                FindingKind::NotChecked,
                &self.path,
                "an Arrow IPC file (ARROW1), not the stream format of save_to_disk: its structure is not checked",
            )),
            State::Ended | State::Failed => {}
        }
        let clean = matches!(self.state, State::Ended);
        Inspection {
            format: "hf".into(),
            samples: clean.then_some(self.rows),
            findings: self.findings,
            ..Inspection::default()
        }
    }
}
