//! WebDataset tar shards written by any tool as a sample source: members grouped into
//! samples exactly as webdataset 1.0.2 groups them (consecutive regular members with
//! the same key, the key being the name up to the first dot of its basename), samples
//! in shard order, then tar order.
//!
//! What a reader would drop or mis-key is left out with the reason naming the shard and
//! member (hidden and extension-less names, `__meta__` members, links and other
//! non-regular members, non-UTF-8 names, paths a file tree cannot hold), and so are
//! samples webdataset would fail on: a field repeated within a sample. A key seen
//! before (non-contiguous in its shard, or in an earlier shard) is refused by the pack
//! naming both samples ([`crate::keys::check_unique`]), never merged. Damage (not a tar, a bad checksum, a truncated member or
//! header, a corrupt compressed stream) is an [`Error::BadInput`] naming the shard and
//! the byte offset; never a silent end as in Python's `tarfile`.
//!
//! Plain tars are walked by positioned reads with a read-ahead buffer; a gzip or zstd
//! shard (told by its magic bytes, not its name) is decompressed once while it is walked,
//! into a temporary file in the scratch directory when one is given, so samples are then
//! read by positioned reads from that copy. The listing holds one [`SampleSpec`] per
//! sample; a sample's place in its shard is its `origin`, and reading walks its headers
//! again from there.

mod braces;
mod bytes;
mod list;
mod read;
mod shard;
mod source;
mod tar_shards;
mod walk;

pub use braces::{BraceError, expand_braces};
pub use tar_shards::{TarShards, is_webdataset_input};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_braces;
#[cfg(test)]
mod tests_damage;
#[cfg(test)]
mod tests_sparse;
