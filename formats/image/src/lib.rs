//! Images for `pack`: decode, orient, flatten, resize and re-encode one image, as
//! img2dataset's `Resizer` does, refusing what cannot or should not be decoded.
//!
//! Owns: the pixels of one image ([`transform`]): what format it really is ([`sniff`]),
//! the decompression-bomb, size and aspect-ratio limits (checked from the header,
//! before any pixel is decoded), EXIF orientation, conversion of CMYK, greyscale,
//! palette, 16-bit and alpha images to 8-bit RGB, the output geometry ([`geometry`]),
//! resampling, and encoding (JPEG, PNG, lossless WebP, `.npy` arrays).
//!
//! Must not know: samples, shards or files. Pure functions of bytes and options: the
//! same input gives the same output bytes whatever thread runs it.

mod area;
mod error;
pub mod geometry;
mod jpeg;
mod kind;
mod options;
mod pixels;
mod png;
mod transform;

pub use self::error::Error;
pub use self::geometry::{Filter, Geometry, geometry};
pub use self::kind::{Kind, sniff};
pub use self::options::{
    DEFAULT_MAX_AREA, ImageOptions, OptionError, OutputFormat, ResizeMode, Size, StoreAs,
};
#[cfg(test)]
use self::transform::guarded;
pub use self::transform::{Transformed, transform, validate};

#[cfg(test)]
mod tests;
