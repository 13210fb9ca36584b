//! Checking a directory (or one file) against its manifest, reading every file once.
//!
//! With a manifest: every listed file present with the recorded size and SHA-256 (a
//! mismatch is located to its first differing chunk through the chunk CRCs), nothing
//! unlisted, the root digest consistent (and equal to a pinned value), `SHA256SUMS`
//! consistent, and each file's inspector (a tar walker, ...) clean with the recorded
//! sample count and keys. Without one: every file's inspector, `SHA256SUMS` when present,
//! and gaps in numbered shard sequences ([`sequence`]). Comparing one file with what
//! was expected is [`compare`]. A partial check ([`verify_ranges`]) reads only the
//! chunks of the byte ranges asked for, against the chunk digests of large files.

mod chunked;
mod compare;
mod coverage;
mod judge;
mod listed;
mod local;
mod options;
mod partial;
mod ranges;
mod report;
mod sequence;
mod steps;

pub use chunked::usable_chunks;
pub use listed::verify_listed;
pub use local::verify_path;
pub use options::{DigestCheck, DigestCheckOutcome, VerifyOptions};
pub use partial::verify_ranges;
pub use ranges::{CheckedRange, chunks_overlapping, plan_ranges};
pub use report::{Coverage, VerifyReport};

#[cfg(test)]
mod chunk_fixture;
#[cfg(test)]
mod tests;
