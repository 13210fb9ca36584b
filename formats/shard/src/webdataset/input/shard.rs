//! What the listing learns about each shard and the reader needs: where its tar bytes
//! are (in place, in a decompressed copy, or only through decompression), and how a
//! sample's place in its shard is packed into [`SampleSpec::origin`].

use std::sync::Arc;

use shardsmith_store::{InputSource, LocalFile, RangeRead, ReadError};

use super::bytes::Codec;
use super::walk::{BLOCK, WalkError};
use crate::Error;
use crate::sample::SampleSpec;

/// Bits of `origin` that hold the sample's first header offset, in blocks.
const OFFSET_BITS: u32 = 40;
/// Most shards one input may have.
pub(super) const MAX_SHARDS: usize = 1 << (64 - OFFSET_BITS);

/// One tar shard of the input.
#[derive(Debug)]
pub(super) struct ShardFile {
    /// Path relative to the input root.
    pub rel: String,
    /// As shown in messages.
    pub full: String,
    /// What goes before the keys of its samples (`pack --key-prefix`; empty: nothing).
    pub key_prefix: String,
}

impl ShardFile {
    /// The key of a sample of this shard as its members spell it (without the prefix).
    pub fn member_key<'k>(&self, key: &'k str) -> &'k str {
        key.strip_prefix(self.key_prefix.as_str()).unwrap_or(key)
    }
}

/// Where a listed shard's tar bytes are read from.
#[derive(Clone, Debug)]
pub(super) enum Body {
    /// A plain tar, read in place by positioned reads; its size when listed.
    Plain(u64),
    /// A compressed tar decompressed into a temporary file (deleted when dropped).
    Spilled(Arc<tempfile::TempPath>),
    /// A compressed tar read by decompressing it from its start.
    Streamed(Codec),
}

impl Body {
    /// True when any sample can be read without decompressing what comes before it.
    pub fn random_access(&self) -> bool {
        !matches!(self, Body::Streamed(_))
    }
}

/// `origin` of the sample whose first header is at `start` in shard `shard`.
pub(super) fn origin(shard: usize, start: u64) -> Option<u64> {
    let blocks = start / BLOCK;
    (shard < MAX_SHARDS && blocks < 1 << OFFSET_BITS)
        .then_some(((shard as u64) << OFFSET_BITS) | blocks)
}

/// The shard index and first header offset of `sample`.
pub(super) fn place(sample: &SampleSpec) -> (usize, u64) {
    (
        (sample.origin >> OFFSET_BITS) as usize,
        (sample.origin & ((1 << OFFSET_BITS) - 1)) * BLOCK,
    )
}

/// Damage found in a shard, as the error that names it.
pub(super) fn damaged(full: &str, e: WalkError) -> Error {
    let reason = if e.reason.contains("offset") {
        e.reason
    } else {
        format!("{} (tar header at offset {})", e.reason, e.at)
    };
    Error::BadInput {
        path: full.to_string(),
        reason,
    }
}

/// A shard that cannot be opened, as the error that names it.
pub(super) fn unreadable(full: &str, listed: Option<u64>, e: ReadError) -> Error {
    match (e, listed) {
        (ReadError::Vanished, Some(listed)) => Error::InputVanished {
            path: full.to_string(),
            listed,
        },
        (ReadError::Changed { read }, Some(listed)) => Error::InputChanged {
            path: full.to_string(),
            listed,
            read,
        },
        (e, _) => Error::io("reading", full, e.into()),
    }
}

/// Random access to the tar bytes of a shard that has it.
pub(super) fn ranged(
    source: &dyn InputSource,
    file: &ShardFile,
    body: &Body,
) -> Result<Arc<dyn RangeRead>, Error> {
    match body {
        Body::Plain(listed) => {
            let src = source
                .open_ranged(&file.rel)
                .map_err(|e| unreadable(&file.full, Some(*listed), e))?;
            if src.len() != *listed {
                return Err(Error::InputChanged {
                    path: file.full.clone(),
                    listed: *listed,
                    read: src.len(),
                });
            }
            Ok(src)
        }
        Body::Spilled(path) => {
            let opened = std::fs::File::open(path.as_ref() as &std::path::Path)
                .and_then(LocalFile::new)
                .map_err(|e| Error::io("reading the decompressed copy of", &file.full, e))?;
            Ok(Arc::new(opened))
        }
        Body::Streamed(_) => source
            .open_ranged(&file.rel)
            .map_err(|e| unreadable(&file.full, None, e)),
    }
}
