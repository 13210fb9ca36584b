//! What every report shares: the version it names, and library types printed with
//! sorted keys.

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
