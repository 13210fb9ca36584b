//! `tokenize --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_manifest::Skipped;

use super::sorted::sorted;

/// What `tokenize --json` prints when the run succeeded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Tokenize<'a> {
    /// True when the output already held this exact dataset and nothing was written.
    pub already_complete: bool,
    /// Always `tokenize`.
    pub command: &'static str,
    /// Documents tokenized (null if the manifest counts none).
    pub documents: Option<u64>,
    /// The token dtype written (`uint16`, `uint32`), from the manifest's options.
    pub dtype: Option<&'a serde_json::Value>,
    /// The end-of-document token id appended to every document, or null without one.
    pub eod_id: Option<&'a serde_json::Value>,
    /// The names of the token files as one brace pattern
    /// (`tokens_{000000..000008}.bin`), or `""` when they form no consecutive run.
    pub file_pattern: String,
    /// Number of files the manifest lists (for Megatron, `.bin` and `.idx` both count).
    pub files: usize,
    /// The token file format written (`megatron`, `nanogpt`, `llmc`).
    pub format: Option<&'a str>,
    /// Bytes of the input files, or null when the manifest records no input.
    pub input_bytes: Option<u64>,
    /// Input bytes this run read (less than `input_bytes` when it resumed).
    pub input_bytes_read: u64,
    /// Number of input files, or null when the manifest records no input.
    pub input_files: Option<u64>,
    /// The manifest's file name inside `output` (`manifest.json`).
    pub manifest: &'static str,
    /// The output directory, as given.
    pub output: String,
    /// Bytes of every file the manifest lists.
    pub output_bytes: u64,
    /// The manifest's root digest (SHA-256 of its canonical JSON).
    pub root_sha256: &'a str,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// Token files an interrupted run had finished and this run kept.
    pub shards_resumed: usize,
    /// Token files this run wrote.
    pub shards_written: usize,
    /// The first malformed records left out, each with its input and the reason.
    #[serde(serialize_with = "sorted")]
    pub skipped: &'a [Skipped],
    /// Number of malformed records left out in all (`skipped` lists the first ones).
    pub skipped_total: u64,
    /// With `--dedup`: `count` and `bytes` (of text) of the documents left out because
    /// their text equals an earlier document's, and the `first` 1,000 of them, each with
    /// its place (`key`: `FILE:LINE`) and the place of the one it repeats (`of`); absent
    /// without `--dedup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<&'a shardsmith_manifest::Duplicates>,
    /// The tokenizer's name (`r50k_base` for `gpt2`, ...).
    pub tokenizer: &'a str,
    /// Tokens written (null if the manifest counts none).
    pub tokens: Option<u64>,
    /// The version of shardsmith.
    pub version: &'static str,
    /// The tokenizer's vocabulary size.
    pub vocab_size: u32,
}

/// What `tokenize --json` prints for one task of a split run (the manifest is written
/// by `merge`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenizeTask<'a> {
    /// True when the task's files were all there already: nothing was tokenized.
    pub already_complete: bool,
    /// Always `tokenize`.
    pub command: &'static str,
    /// Documents this task tokenized.
    pub documents: u64,
    /// Token files kept from an earlier attempt.
    pub files_resumed: usize,
    /// Token files this attempt wrote.
    pub files_written: usize,
    /// `[first, end)` of this task's input files in the run's list, or null when it
    /// has none.
    pub input_files: Option<[usize; 2]>,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// This task's index (0-based).
    pub task: u32,
    /// Number of tasks.
    pub task_count: u32,
    /// Where the index and count were read.
    pub task_source: &'a str,
    /// Tokens this task wrote.
    pub tokens: u64,
    /// The version of shardsmith.
    pub version: &'static str,
}
