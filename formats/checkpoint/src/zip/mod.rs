//! Torch zip checkpoints (and the archives of a DCP `.distcp` file), read by hand:
//!
//! - [`central`] locates the archives from the file's end (end records, zip64 records,
//!   central directory) with a few positioned reads before the pass;
//! - [`stream`] is the sequential pass over the members ([`ZipInspector`]);
//! - [`findings`] judges what the pass saw once it ends (CRC-32s, placeholders,
//!   storages against `data.pkl`, unsafe globals, content scans).

mod central;
mod findings;
mod stream;

pub use central::{Archive, Located, data_start, locate};
pub use stream::ZipInspector;

#[cfg(test)]
mod stream_tests;
