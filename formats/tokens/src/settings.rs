//! The settings of a `tokenize` run, checked before any I/O, and its progress callbacks.

use crate::write::TokenFormat;
use crate::{Error, Result};

/// Settings of a `tokenize` run, checked by [`TokenizeSettings::check`].
#[derive(Clone, Debug)]
pub struct TokenizeSettings {
    /// Output format.
    pub format: TokenFormat,
    /// JSON key or Parquet column holding the text.
    pub field: String,
    /// Tokens per shard (`None`: one file). nanoGPT and llm.c shards hold exactly this
    /// many (the last one fewer); Megatron shards end before the document that would
    /// overflow them.
    pub shard_tokens: Option<u64>,
    /// File name prefix: `PREFIX_000000.bin`.
    pub prefix: String,
    /// Add the end-of-document token to every document.
    pub eod: bool,
    /// The end-of-document token (default: the tokenizer's `<|endoftext|>` or the like).
    pub eod_token: Option<String>,
    /// Special-token text in documents is the special token (else ordinary text).
    pub allow_special: bool,
    /// A malformed record is an error instead of being counted and left out.
    pub strict: bool,
    /// Replace an output that holds a different dataset.
    pub force: bool,
    /// Worker threads.
    pub threads: usize,
    /// Leave out every document whose text equals an earlier document's.
    pub dedup: bool,
}

impl TokenizeSettings {
    /// Checks the settings before any I/O.
    pub fn check(&self) -> Result<()> {
        if self.shard_tokens == Some(0) {
            return Err(Error::Setting("--shard-tokens must be at least 1".into()));
        }
        if self.format == TokenFormat::Llmc && self.shard_tokens.is_none_or(|n| n > i32::MAX as u64)
        {
            return Err(Error::Setting(format!(
                "llm.c files count their tokens in a 32-bit header field: --shard-tokens must be at most {}",
                i32::MAX
            )));
        }
        if !shardsmith_shard::naming::valid_prefix(&self.prefix) {
            return Err(Error::Setting(format!(
                "prefix `{}` must be ASCII letters, digits, `-`, `_` or `.` and not start with a dot",
                self.prefix
            )));
        }
        if self.field.is_empty() {
            return Err(Error::Setting("--field must not be empty".into()));
        }
        Ok(())
    }
}

/// Progress callbacks; called from the writer thread.
pub trait TokenizeObserver: Sync {
    /// Input bytes to read in all (as stored).
    fn planned(&self, _input_bytes: u64) {}
    /// Documents written, input bytes consumed and tokens written since the last call.
    fn advanced(&self, _documents: u64, _input_bytes: u64, _tokens: u64) {}
}

/// Observes nothing.
pub struct NoProgress;

impl TokenizeObserver for NoProgress {}
