//! The `--json` reports: one typed struct per command, whose fields are the keys the
//! README documents as a stable schema, and the error object every command prints when
//! it cannot run (exit 2).
//!
//! The reports print exactly as the `serde_json::json!` objects they replace: fields are
//! declared in alphabetical order (the order `json!` objects print in, as the
//! workspace's serde_json keeps object keys sorted), and library types embedded in a
//! report (findings, skipped inputs, checkpoints, coverage, signature checks) are
//! printed through [`sorted`], with their keys in the same alphabetical order at every
//! depth rather than in the order their crates declare them. The test below holds every
//! report to that.

mod audit;
mod error;
mod manifest;
mod merge;
mod pack;
mod sign;
mod tokenize;
mod verify;

pub use audit::Audit;
pub use error::{Error, ErrorDetail};
pub use manifest::Manifest;
pub use merge::Merge;
pub use pack::Pack;
pub use sign::{Sign, SignRefused};
pub use tokenize::Tokenize;
pub use verify::Verify;

use serde::{Serialize, Serializer};

/// The version of shardsmith every report starts with (its `version` key).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Serializes `value` with the keys of every object in it in alphabetical order, as a
/// `serde_json::Value` holds them: for the library types a report embeds, whose own
/// `Serialize` follows their declaration order.
pub fn sorted<T: Serialize, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(serializer)
}

#[cfg(test)]
mod tests;
