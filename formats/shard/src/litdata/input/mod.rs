//! LitData datasets (`litdata.optimize` output) as a sample source: every item of every
//! chunk, in `index.json` order, read chunk by chunk.
//!
//! Each leaf of the items' pytree is a field named by its path ([`crate::litdata::spec`]),
//! lowercased, whose bytes are what our writers take back for its serializer
//! ([`leaf`]); the serializers' encodings are suggested to typed outputs. The key is the
//! top-level `__key__` leaf when it is a `str`, else the global item index
//! (`000000042`). The listing reads every chunk once (sizes of converted values, such as
//! a `pil` image's PNG, are known only by converting them) and keeps none.

mod dataset;
mod leaf;
pub(crate) mod nested;
mod reader;

pub use self::dataset::{LitdataDataset, is_litdata_input};
