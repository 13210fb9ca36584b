//! What `ls` shows of a token file: its format, dtype, documents and tokens, read from
//! the headers alone (a Megatron `.idx`, an llm.c header) or from the manifest's record
//! of the file (nanoGPT files have no header; llm.c files do not count documents).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{FileEntry, Manifest};

use crate::write::{
    IDX_HEADER, IDX_MAGIC, LLMC_HEADER, LLMC_U16, LLMC_U32, TokenDtype, TokenFormat,
};

/// One token file as `ls` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenFileSummary {
    /// The token file (`.bin`), relative to the dataset root.
    pub path: String,
    /// Its format.
    pub format: TokenFormat,
    /// Bytes per token and their type.
    pub dtype: TokenDtype,
    /// Documents, when the file or the manifest says.
    pub documents: Option<u64>,
    /// Tokens held.
    pub tokens: u64,
    /// Size of the `.bin` in bytes.
    pub bytes: u64,
}

/// The token file `rel` below `root` (a `.bin`; a Megatron `.idx` is described by its
/// `.bin`), or `Ok(None)` when it is not one. `entry` is the manifest's record of the
/// file, `manifest` the whole manifest (its options name the dtype of nanoGPT files).
pub fn summarize(
    root: &Path,
    rel: &str,
    entry: Option<&FileEntry>,
    manifest: Option<&Manifest>,
) -> Result<Option<TokenFileSummary>, SummaryError> {
    if !rel.ends_with(".bin") {
        return Ok(None);
    }
    let path = root.join(rel);
    let unreadable = |source| SummaryError::Unreadable {
        rel: rel.into(),
        source,
    };
    let bytes = std::fs::metadata(&path).map_err(unreadable)?.len();
    let recorded = entry
        .and_then(|e| e.format.as_deref())
        .and_then(TokenFormat::from_name);
    let idx = format!("{}.idx", rel.trim_end_matches(".bin"));
    let head = read_head(&path, LLMC_HEADER as usize).map_err(unreadable)?;
    let format = match recorded {
        Some(f) => f,
        None if root.join(&idx).is_file() => TokenFormat::Megatron,
        None if llmc_dtype(&head).is_some() => TokenFormat::Llmc,
        None => return Ok(None),
    };
    let (dtype, documents, data) = match format {
        TokenFormat::Megatron => {
            let idx_head = read_head(&root.join(&idx), IDX_HEADER as usize).map_err(|source| {
                SummaryError::IndexUnreadable {
                    idx: idx.clone(),
                    source,
                }
            })?;
            let (dtype, documents) = idx_header(&idx_head).map_err(|why| SummaryError::Index {
                idx: idx.clone(),
                why,
            })?;
            (dtype, Some(documents), bytes)
        }
        TokenFormat::Llmc => {
            let dtype =
                llmc_dtype(&head).ok_or_else(|| SummaryError::NoLlmcHeader { rel: rel.into() })?;
            (dtype, None, bytes.saturating_sub(LLMC_HEADER))
        }
        TokenFormat::Nanogpt => {
            let dtype = manifest
                .and_then(|m| m.options.get("dtype"))
                .and_then(Value::as_str)
                .and_then(TokenDtype::from_name)
                .unwrap_or(TokenDtype::Uint16);
            (dtype, None, bytes)
        }
    };
    Ok(Some(TokenFileSummary {
        path: rel.to_string(),
        format,
        dtype,
        documents: documents.or_else(|| entry.and_then(|e| e.documents)),
        tokens: entry.and_then(|e| e.tokens).unwrap_or(data / dtype.size()),
        bytes,
    }))
}

/// Up to `n` first bytes of `path`.
fn read_head(path: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    File::open(path)?.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The dtype of an llm.c file from its magic and version.
fn llmc_dtype(head: &[u8]) -> Option<TokenDtype> {
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

/// Why a Megatron index header cannot be listed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdxHeaderError {
    /// The file does not start with Megatron's magic.
    #[error("not a Megatron index (no MMIDIDX header)")]
    NoHeader,
    /// A dtype code Megatron does not define.
    #[error("unknown dtype code {0}")]
    Dtype(u8),
}

/// Why a token file cannot be summarised.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The token file cannot be read.
    #[error("token file `{rel}` cannot be read: {source}")]
    Unreadable {
        /// The file, relative to the root.
        rel: String,
        /// Why.
        source: std::io::Error,
    },
    /// Its Megatron index cannot be read.
    #[error("index `{idx}` cannot be read: {source}")]
    IndexUnreadable {
        /// The index, relative to the root.
        idx: String,
        /// Why.
        source: std::io::Error,
    },
    /// Its Megatron index has no header that can be listed.
    #[error("index `{idx}`: {why}")]
    Index {
        /// The index, relative to the root.
        idx: String,
        /// Why.
        why: IdxHeaderError,
    },
    /// A file recorded as llm.c that lacks llm.c's header.
    #[error("`{rel}` has no llm.c header (magic and version)")]
    NoLlmcHeader {
        /// The file, relative to the root.
        rel: String,
    },
}

/// (dtype, documents) from a Megatron index header.
fn idx_header(head: &[u8]) -> Result<(TokenDtype, u64), IdxHeaderError> {
    if head.len() < IDX_HEADER as usize || !head.starts_with(IDX_MAGIC) {
        return Err(IdxHeaderError::NoHeader);
    }
    let u64_at = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let dtype = match head[17] {
        8 => TokenDtype::Uint16,
        4 => TokenDtype::Int32,
        code => return Err(IdxHeaderError::Dtype(code)),
    };
    Ok((dtype, u64_at(26).saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let mut head = IDX_MAGIC.to_vec();
        head.extend(1u64.to_le_bytes());
        head.push(8);
        head.extend(5u64.to_le_bytes());
        head.extend(4u64.to_le_bytes());
        assert_eq!(idx_header(&head), Ok((TokenDtype::Uint16, 3)));
        assert!(idx_header(b"nope").is_err());
        let mut llmc = Vec::new();
        llmc.extend(20240801i32.to_le_bytes());
        llmc.extend(7i32.to_le_bytes());
        assert_eq!(llmc_dtype(&llmc), Some(TokenDtype::Uint32));
    }
}
