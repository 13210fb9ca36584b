//! The walk over the storages that follow the pickles of a legacy torch file.

use super::head::Head;
use super::problem::Problem;

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
