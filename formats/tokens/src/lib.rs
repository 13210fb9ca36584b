//! `tokenize`: text corpora → binary token files (Megatron `.bin`/`.idx`, nanoGPT,
//! llm.c), with a manifest.
//!
//! Owns: the tokenizers (our own pre-tokenizer and BPE for the OpenAI encodings, the
//! `tokenizers` crate for a `tokenizer.json`), the token file formats and their
//! inspectors, and the tokenize pipeline. Must not know: shard formats beyond the
//! Parquet reader it shares with `pack`, checkpoints, or the command line; it reads and
//! writes through `shardsmith-store` and ends with its shared finish.
//!
//! 1. The inputs are listed in a fixed order ([`input`]); their documents are read by one
//!    thread in batches of about 1 MiB of text.
//! 2. Worker threads tokenize batches in parallel ([`tokenizer`]: our own pre-tokenizer
//!    and BPE for the OpenAI encodings, the `tokenizers` crate for a `tokenizer.json`).
//! 3. One writer takes the batches back in order and appends their tokens to the current
//!    shard ([`write`]), hashing while writing; a full shard goes to a committer thread
//!    (fsync, resume record, rename) while writing goes on.
//! 4. `SHA256SUMS` and, last, `manifest.json`.
//!
//! The number of batches in flight is bounded, so memory does not grow with the corpus;
//! the output does not depend on the thread count. A killed run resumes at the end of
//! the last committed shard: each shard's record holds the input position where the
//! next shard starts (and, for formats that cut documents, how many tokens of that
//! document the shard already holds).

pub mod batch;
pub mod bpe;
pub mod classes;
mod error;
pub mod input;
pub mod inspect;
pub mod listing;
mod parquet;
mod pipeline;
pub mod pretok;
mod run;
mod settings;
mod shard_record;
pub mod task;
pub mod tokenizer;
mod work;
pub mod write;

pub use error::{Error, Result};
pub use input::{InputKind, InputRoot, Position, TextInput};
pub use run::{TokenizeReport, tokenize};
pub use settings::{NoProgress, TokenizeObserver, TokenizeSettings};
pub use tokenizer::{OpenAi, Tokenizer, TokenizerSpec};
pub use write::{TokenDtype, TokenFormat};

/// The text field of a JSON line, as `tokenize` reads it (for the fuzz targets).
#[doc(hidden)]
pub use work::{JsonTextError, json_text};
