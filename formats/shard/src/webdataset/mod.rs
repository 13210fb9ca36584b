//! WebDataset tar shards, written so that `webdataset` 1.0.2 and `wids` 0.1.11 read
//! exactly the input: plain ustar members (typeflag `0`, name ≤ 100 bytes in the name
//! field, no prefix, no PAX or GNU records), fixed header fields (mode 0444, uid/gid 0,
//! user and group `bigdata`, mtime 0), a sample's files contiguous and sorted by field,
//! and two zero blocks at the end. Optionally compressed as a whole (`.tar.gz`,
//! `.tar.zst`: [`compress`]); sizes and rollover always count the uncompressed tar.

pub mod compress;
pub mod def;
mod encode;
mod format;
pub mod input;
mod inspect;
pub mod readers;
mod unpack;
mod ustar;
pub mod wids;
mod wids_check;

pub use compress::TarCompression;
pub use encode::{member_header, write_member_header, write_padding};
pub use format::WebDataset;
pub use inspect::TarInspector;
pub use readers::IndexKinds;
pub use unpack::ShardInspector;
pub use ustar::{BLOCK, MAX_MEMBER, MAX_NAME};
pub use wids::{WIDS_INDEX, WidsError, WidsShard, index_shard_from};

#[cfg(test)]
mod tests;
