//! Copying a dataset from one location to another, verified on arrival (`shardsmith
//! stage`): every file is hashed while it is copied and compared with the source's
//! manifest, with no second read. A file becomes visible under its name only when its
//! SHA-256 matches; the manifest is written last and only when every file matched, so a
//! staged dataset never looks complete when it is not. Files already at the destination
//! with the right digest (or size, when trusted) are kept: a re-run resumes.
//!
//! A file whose manifest entry lists the SHA-256 of each chunk (files of 1 GiB or more,
//! 64 MiB chunks) is fetched chunk by chunk with positioned (ranged) reads, several
//! chunks in flight, each chunk checked as it arrives and fetched once more if it
//! differs; a chunk that differs twice stops the file there ([`chunked`]). The other
//! files are streamed and hashed whole ([`copy`]). [`run`] drives the files and writes
//! the manifest.
//!
//! Memory: the chunk buffers of all files together stay within
//! [`StageOptions::chunk_memory`] (one chunk when a chunk is larger); every streamed
//! file holds a 1 MiB block.

mod chunked;
mod copy;
mod options;
mod run;

pub use options::{DEFAULT_CHUNK_MEMORY, Mismatch, StageOptions, StageReport};
pub use run::stage;

#[cfg(test)]
mod tests;
