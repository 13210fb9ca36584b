//! What a torch pickle (`data.pkl`, a DCP `.metadata`, a legacy file) holds, read
//! without executing it: the tensors (under every name a loader returns them by) and
//! the storages they live in, the values that are not tensors, every imported global
//! judged against the reader that loads the file ([`trust`]), and the few scalar facts
//! the layout checks need (DeepSpeed partition counts, Megatron parallel sizes).
//!
//! Each tensor's view is checked here against its storage, once, for every command:
//! `verify` reports a [`Fault`], `ls` and `diff` refuse the tensor with the same words.

mod contents;
mod dcp;
pub mod graph;
mod read;
mod render;
pub mod trust;

#[cfg(test)]
pub use contents::View;
pub use contents::{Contents, Fault, Storage};
pub use dcp::{dcp_bytes_items, dcp_storage};
pub use graph::Entry;
pub use read::contents;
pub use trust::Reader;
