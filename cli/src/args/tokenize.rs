//! `tokenize` arguments.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::size::parse_size;

/// Token file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TokenFormatArg {
    /// Megatron-LM / NeMo indexed dataset: PREFIX_NNNNNN.bin + .idx, one sequence per document
    Megatron,
    /// nanoGPT: raw little-endian uint16 tokens (uint32 when the vocabulary needs it)
    Nanogpt,
    /// llm.c / modded-nanogpt: 1024-byte header, then tokens
    Llmc,
}

/// A token count per shard, or `none` for one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardTokens(pub Option<u64>);

/// `--shard-tokens` that is not a token count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a token count; examples: 100M, 50_000_000, 10k, none")]
pub struct NotATokenCount(String);

pub(super) fn parse_shard_tokens(text: &str) -> Result<ShardTokens, NotATokenCount> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(ShardTokens(None));
    }
    let clean: String = text.trim().chars().filter(|&c| c != '_').collect();
    let (digits, multiplier) = match clean.char_indices().last() {
        Some((i, 'k' | 'K')) => (&clean[..i], 1_000),
        Some((i, 'M')) => (&clean[..i], 1_000_000),
        Some((i, 'G')) => (&clean[..i], 1_000_000_000),
        _ => (clean.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .filter(|&n| n > 0)
        .map(|n| ShardTokens(Some(n)))
        .ok_or_else(|| NotATokenCount(text.into()))
}

#[derive(Debug, Args)]
pub struct TokenizeArgs {
    /// Input files or directories (JSONL, .jsonl.gz, .jsonl.zst, Parquet, .txt), then the
    /// output directory (token files, manifest.json, SHA256SUMS; created if needed)
    #[arg(required = true, num_args = 1.., action = clap::ArgAction::Append, value_name = "INPUT... OUTPUT")]
    pub paths: Vec<PathBuf>,

    /// gpt2 (= r50k_base), p50k_base, cl100k_base, o200k_base, or a tokenizer.json path
    ///
    /// The OpenAI encodings work offline (their rank files are built in). A Hugging Face
    /// tokenizer.json is loaded as is, with padding and truncation off. Example:
    /// `--tokenizer cl100k_base` or `--tokenizer ./llama3/tokenizer.json`.
    #[arg(long, short = 't', value_name = "T")]
    pub tokenizer: String,

    /// Token file format
    #[arg(long, value_enum, default_value = "megatron")]
    pub format: TokenFormatArg,

    /// JSON key or Parquet column holding the text
    #[arg(long, default_value = "text", value_name = "NAME")]
    pub field: String,

    /// Tokens per output file (k/M/G ×1000, underscores allowed), or `none` for one file
    ///
    /// nanoGPT and llm.c files hold exactly N tokens (the last fewer) and a document may
    /// continue in the next file, as llm.c writes them; a Megatron file ends before the
    /// document that would overflow it. Resuming restarts at the last finished file.
    /// Example: `--shard-tokens 100M`.
    #[arg(long, value_name = "N", default_value = "100M", value_parser = parse_shard_tokens, conflicts_with = "shard_size")]
    pub shard_tokens: ShardTokens,

    /// Bytes of tokens per output file instead of --shard-tokens (64MiB, 1GB, ...)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub shard_size: Option<u64>,

    /// File name prefix: PREFIX_000000.bin, PREFIX_000001.bin, ...
    #[arg(long, default_value = "tokens")]
    pub prefix: String,

    /// Add the end-of-document token to every document (the default)
    #[arg(long, overrides_with = "no_eod")]
    pub eod: bool,

    /// Add no end-of-document token
    #[arg(long)]
    pub no_eod: bool,

    /// The end-of-document token [default: <|endoftext|>, or </s>, <|end_of_text|>, ...]
    #[arg(long, value_name = "TOKEN")]
    pub eod_token: Option<String>,

    /// Encode special-token text in documents (`<|endoftext|>`) as the special token
    ///
    /// By default it is encoded as ordinary text, like tiktoken's encode_ordinary, so a
    /// document cannot forge a document boundary.
    #[arg(long)]
    pub allow_special: bool,

    /// Fail on the first malformed record instead of counting it and leaving it out
    #[arg(long)]
    pub strict: bool,

    /// Leave out every document whose text equals an earlier document's, byte for byte
    ///
    /// The first occurrence is kept; the summary, --json and the manifest's
    /// "duplicates" give the count and bytes of text and list each left-out document
    /// (`FILE:LINE`) with the place of the one it repeats (the first 1,000). Texts are
    /// compared by a 128-bit SHA-256 digest taken on the worker threads; memory: about
    /// 64 bytes per kept document. In a split run each task leaves out the repeats within
    /// its own share. Example: `--dedup`.
    #[arg(long)]
    pub dedup: bool,

    /// Replace a different dataset already in OUTPUT (only shardsmith's own files are removed)
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub task: super::task::TaskArgs,
}

impl TokenizeArgs {
    /// Every path but the last (call after checking there are two at least).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.paths[..self.paths.len() - 1]
    }

    /// The last path.
    pub fn output(&self) -> &PathBuf {
        self.paths.last().expect("clap requires a path")
    }
}
