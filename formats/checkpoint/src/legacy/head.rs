//! The five pickles at the start of a legacy torch file.

use shardsmith_manifest::{Finding, FindingKind};

use crate::pickle::{self, Node, Pickle, PickleError};
use crate::torch::{self, Contents};

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
