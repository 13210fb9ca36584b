//! What `torch.load` fails on (or ignores) in the storages of a legacy file, in words
//! and as `verify` findings; `ls` and `diff` refuse a file on the same words.

use shardsmith_manifest::{Finding, FindingKind};

/// What `torch.load` fails on (or ignores) in the storages of a legacy file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The count disagrees with the size the pickle declares.
    WrongCount {
        /// Storage key.
        key: String,
        /// Byte offset of the count.
        at: u64,
        /// Elements the file says.
        count: u64,
        /// Elements the pickle declares.
        declared: u64,
    },
    /// The key list names a storage the pickle does not declare.
    Unknown {
        /// Storage key.
        key: String,
    },
    /// The element size of a storage is unknown: the storages from it on cannot be
    /// located.
    Unsized {
        /// Storage key.
        key: String,
        /// Byte offset of its count.
        at: u64,
    },
    /// The file ends inside the storages: in the count or the data of storage `key`.
    Cut {
        /// The storage cut.
        key: String,
        /// Byte offset of its count.
        at: u64,
        /// Where its data ends, when its count was read.
        end: Option<u64>,
        /// Storages after it that are missing.
        missing: usize,
    },
    /// A storage the tensors use has no record: `torch.load` leaves its values
    /// uninitialized.
    NoRecord {
        /// Storage key.
        key: String,
        /// A tensor using it.
        tensor: String,
    },
    /// Bytes after the last storage, which `torch.load` ignores.
    Trailing {
        /// Byte offset of the first.
        at: u64,
        /// How many.
        bytes: u64,
    },
}

impl Problem {
    /// An error (`torch.load` fails or returns garbage), not a warning.
    pub fn is_error(&self) -> bool {
        !matches!(self, Problem::Trailing { .. } | Problem::Unsized { .. })
    }

    /// The problem in words, for a file of `len` bytes.
    pub fn message(&self, len: u64) -> String {
        match self {
            Problem::WrongCount {
                key,
                at,
                count,
                declared,
            } => format!(
                "storage `{key}` holds {count} elements (count at byte {at}) but the pickle declares {declared}: torch.load fails with \"storage has wrong byte size\""
            ),
            Problem::Unknown { key } => format!(
                "the storage key list names `{key}`, which no value of the pickle uses: torch.load fails"
            ),
            Problem::Unsized { key, at } => format!(
                "storage `{key}` (count at byte {at}) has an element type shardsmith does not know: it and the storages after it were not checked"
            ),
            Problem::Cut {
                key,
                at,
                end,
                missing,
            } => {
                let what = match end {
                    Some(end) => format!(
                        "storage `{key}` runs from byte {at} to {end}, past the end of the {len}-byte file"
                    ),
                    None => format!(
                        "the file ends at byte {len}, where the element count of storage `{key}` belongs (byte {at})"
                    ),
                };
                let more = match missing {
                    0 => String::new(),
                    n => format!(", and {n} storage(s) after it are missing"),
                };
                format!(
                    "{what}{more}: the file is cut short; torch.load fails with \"unexpected EOF\""
                )
            }
            Problem::NoRecord { key, tensor } => format!(
                "tensor `{tensor}` uses storage `{key}`, which the file's storage list leaves out: torch.load gives it uninitialized values"
            ),
            Problem::Trailing { at, bytes } => format!(
                "{bytes} bytes after the last storage (from byte {at}), which torch.load ignores"
            ),
        }
    }

    /// The problem as a finding on `path`, a file of `len` bytes.
    pub fn finding(&self, path: &str, len: u64) -> Finding {
        let message = self.message(len);
        match self {
            Problem::WrongCount {
                at,
                count,
                declared,
                ..
            } => Finding::error(FindingKind::BadTensor, path, message)
                .at(*at)
                .values(*declared, *count),
            Problem::Unknown { .. } | Problem::NoRecord { .. } => {
                Finding::error(FindingKind::BadTensor, path, message)
            }
            Problem::Unsized { at, .. } => {
                Finding::warning(FindingKind::UnsupportedDtype, path, message).at(*at)
            }
            Problem::Cut { at, end, .. } => {
                let f = Finding::error(FindingKind::Truncated, path, message);
                match end {
                    Some(end) => f.range(*at, *end).values(*end, len),
                    None => f.at(*at),
                }
            }
            Problem::Trailing { at, bytes } => {
                Finding::warning(FindingKind::TrailingData, path, message).range(*at, at + bytes)
            }
        }
    }
}
