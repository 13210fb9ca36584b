//! `tokenize`: text corpora → binary token files (Megatron `.bin`/`.idx`, nanoGPT,
//! llm.c), with a manifest.
//!
//! Owns: the tokenizers (our own pre-tokenizer and BPE for the OpenAI encodings, the
//! `tokenizers` crate for a `tokenizer.json`), the token file formats and their
//! inspectors, and the tokenize pipeline. Must not know: shard formats beyond the
//! Parquet reader it shares with `pack`, checkpoints, or the command line; it reads and
//! writes through `shardsmith-store` and ends with its shared finish.
//!
//! 1. The inputs are listed in a fixed order ([`input`]) and cut into units: byte ranges
//!    of about 1 MiB of plain JSONL (each holds the lines that start in it), groups of
//!    small files, Parquet row groups, whole compressed files.
//! 2. `--jobs` workers each take the next unit, read it themselves (positioned reads;
//!    a compressed file is read in order by one worker while the others tokenize what it
//!    reads) and tokenize it ([`tokenizer`]: our own pre-tokenizer and BPE for the OpenAI
//!    encodings, the `tokenizers` crate for a `tokenizer.json`), encoding the tokens as
//!    the output's dtype.
//! 3. The batches are written back in input order by whichever worker is free (there is
//!    no reader or writer thread): appended to the current shard ([`write`]), hashed
//!    while written; a full shard goes to a committer thread (fsync, resume record,
//!    rename) while writing goes on.
//! 4. `SHA256SUMS` and, last, `manifest.json`.
//!
//! The number of batches in flight is bounded, so memory does not grow with the corpus;
//! the output does not depend on the thread count nor on where the input was cut. A
//! killed run resumes at the end of the last committed shard: each shard's record holds
//! the input position where the next shard starts (and, for formats that cut documents,
//! how many tokens of that document the shard already holds).

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
