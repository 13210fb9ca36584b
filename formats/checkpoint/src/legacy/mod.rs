//! The layout of a legacy torch file (`_use_new_zipfile_serialization=False`, torch
//! before 1.6): five pickles back to back (magic number, protocol version, sys_info,
//! the object, the sorted list of storage keys), then every storage in the list's order
//! as its element count (8 bytes, little-endian) and its raw bytes.
//!
//! The one reading of that layout for `verify`, `ls` and `diff`: [`head`] reads the
//! pickles, a [`Walk`] follows the storages (fed the bytes as they stream past, or
//! jumping from count to count with positioned reads), and both report what
//! `torch.load` would fail on in the same [`Problem`]s.

use shardsmith_manifest::{Finding, FindingKind};

use crate::pickle::{self, Node, Pickle, PickleError};
use crate::torch::{self, Contents};

mod inspect;
mod problem;

pub use inspect::LegacyInspector;
pub use problem::Problem;

/// Magic number a legacy torch file starts with (`PROTO 2`, `LONG1` 0x1950a86a20f9469cfc6c).
pub const LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19";

/// The protocol version the second pickle holds (`torch.load` refuses any other).
const PROTOCOL_VERSION: i64 = 1001;

/// The pickles of a legacy file.
#[derive(Debug)]
pub struct Head {
    /// What it holds.
    pub contents: Contents,
    /// The storage keys in file order.
    pub keys: Vec<String>,
    /// Saved on a big-endian machine (sys_info says so).
    pub big_endian: bool,
    /// Where the storages begin: the end of the five pickles.
    pub end: u64,
}

/// Why the pickles of a legacy file cannot be read.
#[derive(Debug)]
pub enum HeadError {
    /// Pickle `index` (1 to 5) starting at byte `start` cannot be read.
    Pickle {
        /// Which pickle, from 1.
        index: usize,
        /// Its first byte in the file.
        start: u64,
        /// Why.
        error: PickleError,
    },
    /// The pickles read but are not what `torch.load` expects.
    Structure {
        /// Byte offset of the pickle at fault.
        at: u64,
        /// What is wrong.
        reason: String,
    },
}

impl HeadError {
    /// The data ended inside a pickle: more bytes could complete it.
    pub fn truncated(&self) -> bool {
        matches!(self, HeadError::Pickle { error, .. } if error.truncated)
    }

    /// Byte offset of the error in the file.
    pub fn at(&self) -> u64 {
        match self {
            HeadError::Pickle { start, error, .. } => start + error.at as u64,
            HeadError::Structure { at, .. } => *at,
        }
    }

    /// The error in words.
    pub fn message(&self) -> String {
        match self {
            HeadError::Pickle { index, error, .. } => format!(
                "pickle {index} of 5 ({}) cannot be read: {}",
                [
                    "the magic number",
                    "the protocol version",
                    "sys_info",
                    "the object",
                    "the storage keys"
                ][index - 1],
                error.reason
            ),
            HeadError::Structure { reason, .. } => reason.clone(),
        }
    }
}

/// Reads the five pickles at the start of `data`.
pub fn head(data: &[u8]) -> Result<Head, HeadError> {
    let mut at = 0usize;
    let mut big_endian = false;
    let mut object = None;
    let mut keys = Vec::new();
    for index in 1..=5 {
        let start = at as u64;
        let p = pickle::parse(&data[at..]).map_err(|error| HeadError::Pickle {
            index,
            start,
            error,
        })?;
        at += p.len;
        let bad = |reason: &str| HeadError::Structure {
            at: start,
            reason: reason.to_string(),
        };
        match index {
            2 if p.int(p.root) != Some(PROTOCOL_VERSION) => {
                return Err(bad(
                    "the protocol version is not 1001: torch.load fails with \"Invalid protocol version\"",
                ));
            }
            3 => {
                big_endian = p
                    .get(p.root, "little_endian")
                    .is_some_and(|v| matches!(p.node(v), Node::Bool(false)));
            }
            4 => object = Some(p),
            5 => {
                let items = p
                    .items(p.root)
                    .ok_or_else(|| bad("the storage key list is not a list"))?;
                keys = items
                    .iter()
                    .map(|&k| p.str(k).map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| bad("a storage key is not a string"))?;
            }
            _ => {}
        }
    }
    let object: Pickle = object.expect("read above");
    Ok(Head {
        contents: torch::contents(&object),
        keys,
        big_endian,
        end: at as u64,
    })
}

/// One storage record of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its key.
    pub key: String,
    /// Byte offset of its element count.
    pub at: u64,
    /// Byte offset of its first data byte.
    pub data: u64,
    /// Bytes of data.
    pub bytes: u64,
}

/// One storage as the walk expects it: its key, element size and declared count.
struct Planned {
    key: String,
    size: Option<u64>,
    declared: Option<u64>,
    known: bool,
}

/// The walk over the storages of a legacy file.
pub struct Walk {
    plan: Vec<Planned>,
    next: usize,
    /// Absolute offset of the next byte fed.
    pos: u64,
    count: Vec<u8>,
    left: u64,
    stopped: bool,
    trailing: u64,
    /// The records found, in file order.
    pub records: Vec<Record>,
    problems: Vec<Problem>,
}

impl Walk {
    /// A walk over the storages `head` lists, from the end of its pickles.
    pub fn new(head: &Head) -> Self {
        let storages = &head.contents.storages;
        let plan = head
            .keys
            .iter()
            .map(|key| match storages.get(key) {
                Some(s) => Planned {
                    key: key.clone(),
                    size: match s.untyped {
                        true => Some(1),
                        false => s.dtype.map(|d| d.size()),
                    },
                    declared: s.numel,
                    known: true,
                },
                None => Planned {
                    key: key.clone(),
                    size: None,
                    declared: None,
                    known: false,
                },
            })
            .collect();
        let problems = storages
            .values()
            .filter(|s| !head.keys.contains(&s.key))
            .map(|s| Problem::NoRecord {
                key: s.key.clone(),
                tensor: s.tensors.first().cloned().unwrap_or_else(|| "?".into()),
            })
            .collect();
        Self {
            plan,
            next: 0,
            pos: head.end,
            count: Vec::with_capacity(8),
            left: 0,
            stopped: false,
            trailing: 0,
            records: Vec::new(),
            problems,
        }
    }

    /// Where the next element count is read, when the walk waits for one.
    pub fn next_count(&self) -> Option<u64> {
        (!self.stopped && self.left == 0 && self.next < self.plan.len())
            .then(|| self.pos - self.count.len() as u64)
    }

    /// Passes over up to `max` bytes of storage data without reading them (a positioned
    /// reader jumping to the next count).
    pub fn skip(&mut self, max: u64) {
        let n = self.left.min(max);
        self.left -= n;
        self.pos += n;
    }

    /// Feeds the file's bytes from the walk's position on.
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.stopped {
                self.pos += data.len() as u64;
                return;
            }
            if self.left > 0 {
                let n = self.left.min(data.len() as u64);
                self.skip(n);
                data = &data[n as usize..];
                continue;
            }
            if self.next >= self.plan.len() {
                self.trailing += data.len() as u64;
                self.pos += data.len() as u64;
                return;
            }
            let n = (8 - self.count.len()).min(data.len());
            self.count.extend_from_slice(&data[..n]);
            self.pos += n as u64;
            data = &data[n..];
            if self.count.len() == 8 {
                let count = u64::from_le_bytes(self.count[..].try_into().expect("8 bytes"));
                self.count.clear();
                self.on_count(count);
            }
        }
    }

    fn on_count(&mut self, count: u64) {
        let planned = &self.plan[self.next];
        let key = planned.key.clone();
        let at = self.pos - 8;
        if !planned.known {
            self.problems.push(Problem::Unknown { key });
            self.stopped = true;
            return;
        }
        let Some(size) = planned.size else {
            self.problems.push(Problem::Unsized { key, at });
            self.stopped = true;
            return;
        };
        if let Some(declared) = planned.declared
            && declared != count
        {
            self.problems.push(Problem::WrongCount {
                key,
                at,
                count,
                declared,
            });
            self.stopped = true;
            return;
        }
        let bytes = count.saturating_mul(size);
        self.records.push(Record {
            key,
            at,
            data: self.pos,
            bytes,
        });
        self.left = bytes;
        self.next += 1;
    }

    /// The problems, once the file (`len` bytes) was walked to its end.
    pub fn finish(mut self, len: u64) -> (Vec<Record>, Vec<Problem>) {
        if !self.stopped {
            if self.left > 0 {
                let r = self.records.last().expect("data of a record");
                self.problems.push(Problem::Cut {
                    key: r.key.clone(),
                    at: r.at,
                    end: Some(r.data.saturating_add(r.bytes)),
                    missing: self.plan.len() - self.next,
                });
            } else if self.next < self.plan.len() {
                self.problems.push(Problem::Cut {
                    key: self.plan[self.next].key.clone(),
                    at: self.pos - self.count.len() as u64,
                    end: None,
                    missing: self.plan.len() - self.next - 1,
                });
            } else if self.trailing > 0 {
                self.problems.push(Problem::Trailing {
                    at: len - self.trailing,
                    bytes: self.trailing,
                });
            }
        }
        (self.records, self.problems)
    }
}

/// Walks the storages of the legacy file whose pickles are `head` with positioned reads:
/// `read(at, buf)` fills as much of `buf` as the file holds from `at` and says how much.
pub fn walk_at(
    head: &Head,
    len: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> std::io::Result<usize>,
) -> std::io::Result<(Vec<Record>, Vec<Problem>)> {
    let mut walk = Walk::new(head);
    while let Some(at) = walk.next_count() {
        let mut buf = [0u8; 8];
        let n = read(at, &mut buf)?;
        walk.feed(&buf[..n]);
        if n < 8 {
            break;
        }
        walk.skip(len.saturating_sub(walk.pos));
    }
    // Trailing bytes are only counted, never read.
    if walk.next_count().is_none() && walk.left == 0 && !walk.stopped && walk.pos < len {
        walk.trailing += len - walk.pos;
        walk.pos = len;
    }
    Ok(walk.finish(len))
}

/// The findings of the pickles of the legacy file `path` that `torch.load` cannot read
/// (the storages are the [`Walk`]'s).
pub fn head_findings(path: &str, head: &Head) -> Vec<Finding> {
    let mut out = Vec::new();
    // torch's legacy reader takes `storage_type.dtype`, which UntypedStorage lacks.
    let untyped: Vec<String> = head
        .contents
        .storages
        .values()
        .filter(|s| s.untyped)
        .map(|s| match s.tensors.first() {
            Some(t) => format!("`{}` (tensor `{t}`)", s.key),
            None => format!("`{}`", s.key),
        })
        .collect();
    if !untyped.is_empty() {
        out.push(Finding::error(
            FindingKind::UnsupportedDtype,
            path,
            format!(
                "storage(s) {} are untyped storages, as torch saves dtypes without a typed storage class (float8, uint16, ...) and storages saved on their own: torch.load cannot read them from a legacy file (\"type object 'torch.storage.UntypedStorage' has no attribute 'dtype'\"); re-save with the zip serialization",
                untyped.join(", ")
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
