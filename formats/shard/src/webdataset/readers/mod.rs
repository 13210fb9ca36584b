//! The indexes other readers need to read WebDataset shards at random or in parallel,
//! written in the same pass as the shards (`pack --index`) or from existing shards
//! (`index --for`): DALI's per-shard index (as `wds2idx` writes it), Megatron-Energon's
//! `.nv-meta/` and per-shard `.tar.idx` (as `energon prepare` writes them). wids' index
//! is in [`super::wids`]. All of them are made from a [`Listing`] of each shard: where
//! each sample and member lies.

pub(crate) mod check;
pub mod energon;
mod facts;
mod files;
pub mod listing;
pub mod sqlite;

pub(crate) use check::{check_reader_indexes, wants_listing};
pub(crate) use facts::{FactsBuilder, index_files};
pub use files::{IndexKinds, ListingWriter, UnknownIndex, dali_name, sort_key, tar_idx_name};
pub use listing::Listing;
pub use sqlite::SqliteError;
