//! Checking a directory (or one file) against its manifest, reading every file once.
//!
//! With a manifest: every listed file present with the recorded size and SHA-256 (a
//! mismatch is located to its first differing chunk through the chunk CRCs), nothing
//! unlisted, the root digest consistent (and equal to a pinned value), `SHA256SUMS`
//! consistent, and each file's inspector (a tar walker, ...) clean with the recorded
//! sample count and keys. Without one: every file's inspector, `SHA256SUMS` when present,
//! and gaps in numbered shard sequences ([`sequence`]). Comparing one file with what
//! was expected is [`compare`].

mod chunked;
mod compare;
mod coverage;
mod judge;
mod listed;
mod local;
mod options;
mod report;
mod sequence;
mod steps;

pub use chunked::usable_chunks;
pub use listed::verify_listed;
pub use local::verify_path;
pub use options::{DigestCheck, DigestCheckOutcome, VerifyOptions};
pub use report::{Coverage, VerifyReport};

#[cfg(test)]
mod tests;
