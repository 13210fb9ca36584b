//! The layout of a legacy torch file (`_use_new_zipfile_serialization=False`, torch
//! before 1.6): five pickles back to back (magic number, protocol version, sys_info,
//! the object, the sorted list of storage keys), then every storage in the list's order
//! as its element count (8 bytes, little-endian) and its raw bytes.
//!
//! The one reading of that layout for `verify`, `ls` and `diff`: [`head`] reads the
//! pickles, a [`Walk`] follows the storages (fed the bytes as they stream past, or
//! jumping from count to count with positioned reads), and both report what
//! `torch.load` would fail on in the same [`Problem`]s.

mod head;
mod inspect;
mod problem;
mod walk;

pub use head::{HeadError, LEGACY_MAGIC, head};
pub use inspect::LegacyInspector;
pub use walk::walk_at;

#[cfg(test)]
mod tests;
