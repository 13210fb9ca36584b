//! SHA-256 manifests for shardsmith.
//!
//! This crate is the leaf of the workspace: it knows how to hash bytes while they are
//! written or read ([`Digester`], [`HashingWriter`]), how a manifest looks on disk
//! ([`Manifest`], [`sums`]), how to walk a directory deterministically ([`walk`]), and how
//! to check a directory, or a tree read through a listing ([`ListedTree`]), against a
//! manifest ([`verify`]). Format-specific structural checks
//! plug in through the [`Inspector`] trait, so the same single read of every file feeds
//! the SHA-256, the per-chunk CRC-32 and the format's own parser.
//!
//! The crate is synchronous, never prints and never exits: problems found in the data are
//! returned as [`Finding`]s, problems that stop the work as [`Error`]s.
//!
//! ```
//! use shardsmith_manifest::Digester;
//! let mut digester = Digester::new(1 << 20);
//! digester.update(b"abc");
//! let digest = digester.finish();
//! assert_eq!(
//!     digest.sha256_hex(),
//!     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
//! );
//! ```

pub mod chunks;
mod commit;
mod digest;
pub mod error;
mod finding;
mod hex;
mod inspect;
mod model;
pub mod scan;
pub mod sums;
mod tree;
pub mod unfinished;
pub mod verify;
pub mod walk;

pub use chunks::{ChunkDigests, ChunkPolicy, ExpectedSize};
pub use commit::commit;
pub use digest::{DEFAULT_CHUNK_SIZE, Digester, FileDigest, HashingWriter};
pub use error::{Classify, Error, ErrorKind, Result};
pub use finding::{Finding, FindingKind, Severity};
pub use hex::{hex, parse_sha256, sha256_hex};
pub use inspect::{CHANGED, FileContext, Inspection, Inspector, InspectorFactory, NoInspection};
pub use model::{
    Duplicate, Duplicates, FileEntry, InputSummary, MANIFEST_FILE, MANIFEST_VERSION,
    MAX_LISTED_DUPLICATES, Manifest, ManifestKind, SUMS_FILE, Skipped, TensorRecord, Totals,
    canonical_json, root_digest,
};
pub use tree::ListedTree;

/// Prefix of every temporary or state entry shardsmith creates inside a dataset directory.
/// Such names are never part of a dataset; `verify` reports leftovers.
pub const TEMP_PREFIX: &str = ".shardsmith-";

/// Prefix of the scratch files this process keeps beside its output while it runs
/// (decompressed copies of compressed input shards): under [`TEMP_PREFIX`], and named
/// after the process so that the clean-up of an earlier run's leftovers spares them.
pub fn scratch_prefix() -> String {
    format!("{TEMP_PREFIX}scratch-{}-", std::process::id())
}
