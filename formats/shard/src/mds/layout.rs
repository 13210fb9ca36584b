//! What an MDS dataset's shards share: the columns and the limits.

use serde_json::Value;

use super::codec::MdsCompression;
use crate::columns::Encoding;

/// Largest raw shard: offsets are `u32`.
pub const MAX_SHARD: u64 = u32::MAX as u64;

pub(super) struct Column {
    pub(super) name: String,
    pub(super) encoding: Encoding,
    pub(super) fixed: Option<u64>,
    pub(super) is_key: bool,
}

pub(super) struct Layout {
    pub(super) columns: Vec<Column>,
    pub(super) size_limit: u64,
    /// Record buffers of finished shards, reused so each worker touches its shard-sized
    /// buffer's pages once, not once per shard.
    pub(super) buffers: std::sync::Mutex<Vec<Vec<u8>>>,
    pub(super) compression: Option<MdsCompression>,
    pub(super) hashes: Vec<String>,
    pub(super) config: Value,
    pub(super) config_json: String,
}
