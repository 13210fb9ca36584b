//! Why an image is left out.

/// Why an image is left out.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// No image signature.
    #[error(
        "is not an image: its first bytes match no format shardsmith decodes (JPEG, PNG, GIF, WebP, BMP, TIFF)"
    )]
    NotAnImage,
    /// The header declares too many pixels.
    #[error(
        "declares {width} x {height} pixels ({pixels}), more than --max-image-area {limit}: refused before decoding (a decompression bomb?)"
    )]
    TooManyPixels {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// Their product.
        pixels: u64,
        /// The limit.
        limit: u64,
    },
    /// A zero side.
    #[error("declares an empty image ({width} x {height} pixels)")]
    Empty {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
    },
    /// Smaller than `--min-image-size`.
    #[error("is {width} x {height} pixels: its smaller side is below --min-image-size {min}")]
    TooSmall {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// The limit.
        min: u32,
    },
    /// Longer than `--max-aspect-ratio` allows.
    #[error(
        "is {width} x {height} pixels: aspect ratio {ratio:.2} exceeds --max-aspect-ratio {max}"
    )]
    AspectRatio {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Longer side / shorter side.
        ratio: f64,
        /// The limit.
        max: f64,
    },
    /// The decoder failed.
    #[error("{format} does not decode: {detail}")]
    Decode {
        /// The format it was decoded as.
        format: &'static str,
        /// The decoder's message.
        detail: String,
    },
    /// The encoder failed.
    #[error("cannot be encoded as {format}: {detail}")]
    Encode {
        /// The output format.
        format: &'static str,
        /// The encoder's message.
        detail: String,
    },
}

/// The message a panic carried (`panic!` with a literal or a formatted string, or
/// libjpeg's error text resumed by the mozjpeg crate), if it carried one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}
