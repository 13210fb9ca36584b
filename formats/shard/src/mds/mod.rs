//! MosaicML Streaming (MDS) shards, byte-identical to `streaming.MDSWriter` for the same
//! samples and options (`../shared/reference/mds.md`).
//!
//! A dataset is `index.json` plus `shard.NNNNN.mds[.EXT]`. A shard is `u32 N`,
//! `u32 offsets[N+1]` (absolute), the writer's config JSON, then the records; a record is
//! a `u32` size for each variable-size column, then every column's bytes, columns in
//! sorted name order. Columns are the sample key plus one per field; a field's
//! encoding comes from its name (`json`, text, else bytes) or `--column FIELD:ENCODING`.
//! Rollover follows MDSWriter's `size_limit` rule exactly, except that no shard is ever
//! empty and no shard may reach 4 GiB (its offsets are 32-bit).

pub mod codec;
mod codec_error;
pub mod def;
mod encode;
mod format;
mod index_check;
mod index_file;
pub mod input;
mod inspect;
mod layout;
pub mod pyjson;

pub use self::codec::{CompressionError, Family, MdsCompression};
pub use self::format::{Mds, MdsOptions};
pub use self::index_check::check_indices;
pub(crate) use self::index_file::index_files;
pub use self::inspect::MdsInspector;
pub use self::layout::MAX_SHARD;
