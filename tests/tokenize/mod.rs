//! `tokenize`: its formats end to end (`basic`, which also holds the corpus helpers),
//! input cut across workers (`parallel`), runs that stop or repeat, `verify` of its output, and the Python reference tokenizers
//! and readers (`interop`).

pub mod basic;
mod dedup;
mod interop;
mod parallel;
mod runs;
mod verify;
