//! Images transformed while packing (`--image-size`, `--image-format`, ...): a
//! [`SampleSource`] over another one whose image fields come out decoded, resized and
//! re-encoded ([`shardsmith_image`]), with their sizes in the sample's metadata.
//!
//! The plan needs every field's size before any shard is written, and a resized image's
//! size is known only once it is encoded. So listing transforms every sample that has an
//! image, in parallel, and keeps the results in a scratch file ([`spill`]); the plan is
//! made from their exact sizes and the shards are written from the scratch file. Each
//! image is decoded once; memory holds one sample per worker; the scratch file holds
//! about the output's size and is removed when the run ends. Samples without an image
//! are read from the source as usual.

mod meta;
mod prepare;
mod sample_source;
mod source;
mod spill;

pub use self::source::{ImageSettings, ImageSource, Target};
