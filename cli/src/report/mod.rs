//! The `--json` reports: one typed struct per command, whose fields are the keys the
//! reference pages (`cli/README.md` and the pages it links to) document as a stable
//! schema, and the error object every command prints when it cannot run (exit 2).
//!
//! The reports print exactly as the `serde_json::json!` objects they replace: fields are
//! declared in alphabetical order (the order `json!` objects print in, as the
//! workspace's serde_json keeps object keys sorted), and library types embedded in a
//! report (findings, skipped inputs, checkpoints, coverage, signature checks) are
//! printed through [`sorted`], with their keys in the same alphabetical order at every
//! depth rather than in the order their crates declare them. The test below holds every
//! report to that.

mod audit;
mod diff;
mod error;
mod index;
mod list;
mod look;
mod manifest;
mod merge;
mod pack;
pub mod schema;
mod sign;
mod sorted;
mod stage;
mod tokenize;
mod verify;

pub use audit::{Audit, HfCacheAudit};
pub use diff::Diff;
pub use error::{Error, ErrorDetail};
pub use index::Index;
pub use list::List;
pub use look::{
    DuplicateContents, DuplicateKeys, FieldStats, LsCheckpoint, LsSamples, LsShards, LsTokens,
    SampleRow, ShardRow, ShardTotals, Stats, TensorRow, TokenFileRow,
};
pub use manifest::Manifest;
pub use merge::Merge;
pub use pack::{Pack, PackTask};
pub use sign::{Sign, SignRefused};
pub use stage::{Stage, StageMismatch};
pub use tokenize::{Tokenize, TokenizeTask};
pub use verify::Verify;

pub use sorted::VERSION;

#[cfg(test)]
mod tests;
