//! What the token inspectors share: the manifest's options, and the headers of Megatron
//! indices and llm.c files.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::Manifest;

use crate::write::{IDX_HEADER, IDX_MAGIC, LLMC_U16, LLMC_U32, TokenDtype};

/// What the manifest says about the token files.
#[derive(Clone, Debug, Default)]
pub(super) struct Options {
    pub(super) vocab: Option<u64>,
    pub(super) eod: Option<u32>,
    pub(super) allow_special: bool,
    pub(super) dtype: Option<TokenDtype>,
}

impl Options {
    pub(super) fn from(manifest: Option<&Manifest>) -> Self {
        let Some(m) = manifest else {
            return Self::default();
        };
        let o = &m.options;
        Self {
            vocab: o.get("vocab_size").and_then(Value::as_u64),
            eod: o
                .get("eod_id")
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok()),
            allow_special: o.get("allow_special").and_then(Value::as_bool) == Some(true),
            dtype: o
                .get("dtype")
                .and_then(Value::as_str)
                .and_then(TokenDtype::from_name),
        }
    }
}

pub(super) fn idx_path(bin: &str) -> String {
    format!("{}.idx", bin.trim_end_matches(".bin"))
}

/// (dtype, sequences, documents + 1) of the `.idx` beside `bin`, if it has a valid header.
pub(super) fn idx_header(root: &Path, bin: &str) -> Option<(TokenDtype, u64, u64)> {
    let mut head = [0u8; IDX_HEADER as usize];
    File::open(root.join(idx_path(bin)))
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    parse_idx_header(&head).ok()
}

/// Why the first bytes of a `.idx` are not a header Megatron reads.
#[derive(Debug, thiserror::Error)]
pub(super) enum IdxHeaderError {
    #[error("not a Megatron index: the magic is not MMIDIDX\\0\\0")]
    Magic,
    #[error("version {0}; Megatron reads only version 1")]
    Version(u64),
    #[error("dtype code {0}: token files use 8 (uint16) or 4 (int32)")]
    Dtype(u8),
    #[error(
        "the header counts {sequences} sequences and {boundaries} document boundaries: no index can hold that many"
    )]
    Counts { sequences: u64, boundaries: u64 },
}

pub(super) fn parse_idx_header(head: &[u8]) -> Result<(TokenDtype, u64, u64), IdxHeaderError> {
    if !head.starts_with(IDX_MAGIC) {
        return Err(IdxHeaderError::Magic);
    }
    let u64_at = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let version = u64_at(9);
    if version != 1 {
        return Err(IdxHeaderError::Version(version));
    }
    let dtype = match head[17] {
        8 => TokenDtype::Uint16,
        4 => TokenDtype::Int32,
        code => {
            return Err(IdxHeaderError::Dtype(code));
        }
    };
    let (sequences, boundaries) = (u64_at(18), u64_at(26));
    // The arrays the counts describe (a length and a pointer per sequence, a boundary
    // per document + 1) must fit in a file: hostile counts must not overflow the
    // offsets computed from them.
    let arrays = sequences
        .checked_mul(12)
        .zip(boundaries.checked_mul(8))
        .and_then(|(a, b)| a.checked_add(b))
        .and_then(|n| n.checked_add(IDX_HEADER));
    if arrays.is_none_or(|n| n > i64::MAX as u64) {
        return Err(IdxHeaderError::Counts {
            sequences,
            boundaries,
        });
    }
    Ok((dtype, sequences, boundaries))
}

pub(super) fn llmc_magic(head: &[u8]) -> Option<TokenDtype> {
    let word = |i: usize| {
        Some(i32::from_le_bytes(
            head.get(4 * i..4 * i + 4)?.try_into().ok()?,
        ))
    };
    match (word(0)?, word(1)?) {
        v if v == LLMC_U16 => Some(TokenDtype::Uint16),
        v if v == LLMC_U32 => Some(TokenDtype::Uint32),
        _ => None,
    }
}

pub(super) fn read_id(bytes: &[u8], dtype: TokenDtype) -> u32 {
    match dtype {
        TokenDtype::Uint16 => u32::from(u16::from_le_bytes([bytes[0], bytes[1]])),
        _ => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
    }
}
