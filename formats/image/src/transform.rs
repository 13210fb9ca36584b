//! One image transformed: decoded (with its limits checked from the header first),
//! oriented, converted to 8-bit RGB(A), resized, cropped, padded and encoded, or kept
//! as it was when nothing needs to change.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageReader, Limits};

use crate::error::{self, Error};
use crate::geometry::{Filter, Geometry, geometry};
use crate::kind::Kind;
use crate::options::{ImageOptions, OutputFormat, StoreAs};
use crate::{jpeg, pixels, png};

/// One image, transformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transformed {
    /// The bytes to store (the original bytes when `kept_original`).
    pub bytes: Vec<u8>,
    /// No change was needed and `skip_reencode` kept the input as it was.
    pub kept_original: bool,
    /// Final width.
    pub width: u32,
    /// Final height.
    pub height: u32,
    /// Width as displayed (EXIF orientation applied), before resizing.
    pub original_width: u32,
    /// Height as displayed, before resizing.
    pub original_height: u32,
    /// The format it was decoded as.
    pub source: Kind,
}

/// Transforms one image (`data`, whose content says it is `kind`: see [`crate::sniff`]).
///
/// Decoders still panic on some malformed files (see [`png`]); such a panic is this
/// image's error, never the end of the run.
pub fn transform(data: &[u8], kind: Kind, options: &ImageOptions) -> Result<Transformed, Error> {
    guarded(kind, || transform_unguarded(data, kind, options))
}

/// Decodes `data` as `kind` in full and drops the pixels: `pack`'s and `verify`'s
/// `--validate full`. No pixel limit beyond the image crate's default allocation limit.
pub fn validate(data: &[u8], kind: Kind) -> Result<(), Error> {
    guarded(kind, || {
        if kind == Kind::Png {
            png::check_palette(data)?;
        }
        image::load_from_memory_with_format(data, kind.image_format())
            .map(drop)
            .map_err(|e| Error::Decode {
                format: kind.name(),
                detail: e.to_string(),
            })
    })
}

/// Runs `work` on one image's bytes; a panic inside it (a decoder's, on malformed data)
/// becomes a decode error with the panic's message.
pub(crate) fn guarded<T>(kind: Kind, work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        let why = error::panic_message(&*payload).unwrap_or_else(|| "no message".into());
        Err(Error::Decode {
            format: kind.name(),
            detail: format!("the decoder failed on malformed data ({why})"),
        })
    })
}

fn transform_unguarded(
    data: &[u8],
    kind: Kind,
    options: &ImageOptions,
) -> Result<Transformed, Error> {
    let format = kind.name();
    if kind == Kind::Png {
        png::check_palette(data)?;
    }
    let decode_err = |e: image::ImageError| Error::Decode {
        format,
        detail: e.to_string(),
    };
    let mut reader = ImageReader::with_format(Cursor::new(data), kind.image_format());
    let mut limits = Limits::default();
    // The pixel limit is ours; the allocation limit only backs it up (RGBA16 is 8 bytes
    // a pixel; decoders' own buffers come on top).
    limits.max_alloc = Some(options.max_area.saturating_mul(8).max(512 << 20));
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(decode_err)?;
    let (width, height) = decoder.dimensions();
    check_area(width, height, options)?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let (shown_w, shown_h) = if rotates(orientation) {
        (height, width)
    } else {
        (width, height)
    };
    check_shape(shown_w, shown_h, options)?;
    let geometry = geometry(shown_w, shown_h, options);
    if let Some(image) = reduced_jpeg(
        data,
        kind,
        &geometry,
        rotates(orientation),
        options.full_decode,
    )? {
        let mut decoded = DynamicImage::ImageRgb8(image);
        decoded.apply_orientation(orientation);
        return finish(
            pixels::Pixels::rgb(decoded.into_rgb8()),
            &geometry,
            options,
            (shown_w, shown_h),
            kind,
        );
    }
    let mut decoded = DynamicImage::from_decoder(decoder).map_err(decode_err)?;
    decoded.apply_orientation(orientation);
    let keep_alpha = options.store == StoreAs::Encoded && options.format == OutputFormat::Png;
    if options.skip_reencode
        && orientation == image::metadata::Orientation::NoTransforms
        && keeps_original(data, kind, options, &geometry, &decoded, keep_alpha)
    {
        return Ok(Transformed {
            bytes: data.to_vec(),
            kept_original: true,
            width: shown_w,
            height: shown_h,
            original_width: shown_w,
            original_height: shown_h,
            source: kind,
        });
    }
    let image = to_pixels(decoded, keep_alpha);
    finish(image, &geometry, options, (shown_w, shown_h), kind)
}

/// The pixel count the header declares, against `--max-image-area` and zero.
fn check_area(width: u32, height: u32, options: &ImageOptions) -> Result<(), Error> {
    let pixels = u64::from(width) * u64::from(height);
    if pixels > options.max_area {
        return Err(Error::TooManyPixels {
            width,
            height,
            pixels,
            limit: options.max_area,
        });
    }
    if pixels == 0 {
        return Err(Error::Empty { width, height });
    }
    Ok(())
}

/// Whether `skip_reencode` may keep the input bytes (its orientation a no-op): stored
/// encoded, in its own format, unchanged in geometry, 8-bit grey or RGB(A), and its
/// alpha kept if it has one.
fn keeps_original(
    data: &[u8],
    kind: Kind,
    options: &ImageOptions,
    geometry: &Geometry,
    decoded: &DynamicImage,
    keep_alpha: bool,
) -> bool {
    let had_alpha = decoded.color().has_alpha();
    // Only 8-bit grey or RGB(A) is kept as it is: a CMYK/YCCK JPEG (decoded to RGB here,
    // differently by every other library) or a 16-bit PNG is re-encoded.
    let eight_bit = matches!(
        decoded.color(),
        image::ColorType::L8
            | image::ColorType::La8
            | image::ColorType::Rgb8
            | image::ColorType::Rgba8
    ) && !(kind == Kind::Jpeg
        && jpeg::frame(data).is_some_and(|f| f.components == 4));
    let unchanged = geometry.resize.is_none() && geometry.crop.is_none() && geometry.pad.is_none();
    let same_format = match options.format {
        OutputFormat::Jpeg => kind == Kind::Jpeg,
        OutputFormat::Png => kind == Kind::Png,
        OutputFormat::Webp => kind == Kind::Webp,
    };
    options.store == StoreAs::Encoded
        && unchanged
        && same_format
        && eight_bit
        && (!had_alpha || keep_alpha)
}

/// The decoded image as 8-bit RGB, or RGBA when `keep_alpha` and it has alpha (else
/// alpha is flattened onto white).
fn to_pixels(decoded: DynamicImage, keep_alpha: bool) -> pixels::Pixels {
    let had_alpha = decoded.color().has_alpha();
    let plain = decoded.color() == image::ColorType::Rgb8;
    if had_alpha && keep_alpha {
        pixels::Pixels::rgba(decoded.into_rgba8())
    } else if had_alpha {
        pixels::Pixels::flattened(&decoded.into_rgba8())
    } else if plain {
        pixels::Pixels::rgb(decoded.into_rgb8())
    } else {
        pixels::Pixels::rgb(decoded.to_rgb8())
    }
}

/// A JPEG that shrinks, decoded by libjpeg-turbo at the smallest DCT scale that keeps
/// twice the resize's size, or in full (always when `full`) ([`jpeg`]); `None` when it
/// takes the image crate's decoder.
fn reduced_jpeg(
    data: &[u8],
    kind: Kind,
    geometry: &Geometry,
    rotated: bool,
    full: bool,
) -> Result<Option<image::RgbImage>, Error> {
    let Some((w, h, Filter::Area)) = geometry.resize else {
        return Ok(None);
    };
    if kind != Kind::Jpeg {
        return Ok(None);
    }
    let Some(frame) = jpeg::frame(data) else {
        return Ok(None);
    };
    let (need_w, need_h) = if rotated { (h, w) } else { (w, h) };
    let Some(mut n) = jpeg::reduced_scale(frame, need_w, need_h) else {
        return Ok(None);
    };
    if full {
        n = 8;
    }
    jpeg::decode_reduced(data, frame, n).map(Some)
}

/// Resizes, crops, pads and encodes decoded pixels.
fn finish(
    image: pixels::Pixels,
    geometry: &Geometry,
    options: &ImageOptions,
    (shown_w, shown_h): (u32, u32),
    kind: Kind,
) -> Result<Transformed, Error> {
    let image = image.apply(geometry)?;
    let bytes = match options.store {
        StoreAs::Tensor => image.npy(),
        StoreAs::Encoded => image.encode(options.format, options.quality)?,
    };
    Ok(Transformed {
        bytes,
        kept_original: false,
        width: geometry.width,
        height: geometry.height,
        original_width: shown_w,
        original_height: shown_h,
        source: kind,
    })
}

fn rotates(orientation: image::metadata::Orientation) -> bool {
    use image::metadata::Orientation::*;
    matches!(
        orientation,
        Rotate90 | Rotate270 | Rotate90FlipH | Rotate270FlipH
    )
}

fn check_shape(width: u32, height: u32, options: &ImageOptions) -> Result<(), Error> {
    if width.min(height) < options.min_size {
        return Err(Error::TooSmall {
            width,
            height,
            min: options.min_size,
        });
    }
    let ratio = f64::from(width.max(height)) / f64::from(width.min(height));
    if ratio > options.max_aspect_ratio {
        return Err(Error::AspectRatio {
            width,
            height,
            ratio,
            max: options.max_aspect_ratio,
        });
    }
    Ok(())
}
