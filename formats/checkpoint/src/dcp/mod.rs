//! DCP data files (`__R_I.distcp`), checked as `dcp.load` reads them: item by item, at
//! the byte ranges `.metadata` records (`storage_data`). Saved with the default
//! `TORCH_SAVE` format an item is a complete torch zip; with the ZStandard extension it
//! is a zstd frame decoding to one ([`item`]); saved with
//! `serialization_format=SAFETENSORS` the file's tensors sit in one safetensors blob
//! after the zips of its non-tensor items ([`blob`]). Bytes after the last item are
//! trailing data, which `dcp.load` never reads. A file no readable `.metadata`
//! references is split by its own structure: zips walked back from its end, a blob
//! after them.

mod blob;
mod inspector;
mod item;
pub mod meta;
mod plan;
pub mod transform;

pub use inspector::{DAMAGED, DcpDataInspector};
pub use plan::locate;

#[cfg(test)]
mod tests;
