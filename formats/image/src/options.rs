//! What to do with each image: img2dataset's options, with its names and meanings, checked
//! before any I/O.

use std::fmt;

use serde_json::{Value, json};

/// Why an image option was refused (before any image is read).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionError {
    /// A resize mode img2dataset does not have.
    #[error(
        "unknown resize mode `{0}`; use no, keep_ratio, keep_ratio_largest, center_crop or border"
    )]
    ResizeMode(String),
    /// An output format shardsmith does not write.
    #[error("unknown image format `{0}`; use jpg, png or webp")]
    Format(String),
    /// A target size that is not `N` or `WxH` within limits.
    #[error("image size `{0}` must be N or WxH, each from 1 to 65535")]
    Size(String),
    /// `--image-quality` out of JPEG's range.
    #[error("--image-quality {0} is not a JPEG quality (1 to 100)")]
    JpegQuality(u8),
    /// `--image-quality` out of PNG's compression levels.
    #[error(
        "--image-quality {0} is not a PNG compression level: for png it is 0 to 9, as in img2dataset"
    )]
    PngLevel(u8),
    /// `--max-image-area 0`.
    #[error("--max-image-area must be at least 1")]
    MaxArea,
    /// `--max-aspect-ratio` below 1 (or NaN).
    #[error("--max-aspect-ratio {0} must be at least 1 (longer side / shorter side)")]
    AspectRatio(f64),
}

/// How an image is fitted to the target size (img2dataset's `resize_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeMode {
    /// Keep the image's size.
    No,
    /// Scale so the smaller side is the target (the image covers the target box).
    KeepRatio,
    /// Scale so the larger side is the target (the image fits in the target box).
    KeepRatioLargest,
    /// As `KeepRatio`, then cut the centre to exactly the target size.
    CenterCrop,
    /// As `KeepRatioLargest`, then pad with white to exactly the target size.
    Border,
}

impl ResizeMode {
    /// Parses img2dataset's spelling.
    pub fn parse(text: &str) -> Result<Self, OptionError> {
        Ok(match text {
            "no" => ResizeMode::No,
            "keep_ratio" => ResizeMode::KeepRatio,
            "keep_ratio_largest" => ResizeMode::KeepRatioLargest,
            "center_crop" => ResizeMode::CenterCrop,
            "border" => ResizeMode::Border,
            other => return Err(OptionError::ResizeMode(other.to_string())),
        })
    }

    /// img2dataset's spelling.
    pub fn name(self) -> &'static str {
        match self {
            ResizeMode::No => "no",
            ResizeMode::KeepRatio => "keep_ratio",
            ResizeMode::KeepRatioLargest => "keep_ratio_largest",
            ResizeMode::CenterCrop => "center_crop",
            ResizeMode::Border => "border",
        }
    }
}

/// The encoding of the images written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Baseline JPEG, 4:2:0 (OpenCV's and libjpeg's default).
    Jpeg,
    /// PNG (alpha kept).
    Png,
    /// Lossless WebP.
    Webp,
}

impl OutputFormat {
    /// Parses `jpg`, `png` or `webp`.
    pub fn parse(text: &str) -> Result<Self, OptionError> {
        Ok(match text {
            "jpg" | "jpeg" => OutputFormat::Jpeg,
            "png" => OutputFormat::Png,
            "webp" => OutputFormat::Webp,
            other => return Err(OptionError::Format(other.to_string())),
        })
    }

    /// The field extension images of this format get.
    pub fn ext(self) -> &'static str {
        match self {
            OutputFormat::Jpeg => "jpg",
            OutputFormat::Png => "png",
            OutputFormat::Webp => "webp",
        }
    }
}

/// Target width and height.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Size {
    /// Parses `256` (square) or `320x240` (width x height).
    pub fn parse(text: &str) -> Result<Self, OptionError> {
        let number = |t: &str| match t.trim().parse::<u32>() {
            Ok(n) if (1..=65_535).contains(&n) => Ok(n),
            _ => Err(OptionError::Size(text.to_string())),
        };
        match text.split_once(['x', 'X']) {
            Some((w, h)) => Ok(Size {
                width: number(w)?,
                height: number(h)?,
            }),
            None => {
                let n = number(text)?;
                Ok(Size {
                    width: n,
                    height: n,
                })
            }
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// What images become: stored encoded, or as decoded pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreAs {
    /// An encoded image (`--image-format`).
    Encoded,
    /// A uint8 height x width x 3 array in a `.npy` file.
    Tensor,
}

/// Pixels above this refuse to decode unless raised: Pillow's
/// `DecompressionBombError` threshold (2 x `Image.MAX_IMAGE_PIXELS`). At 3 bytes a
/// pixel that is 537 MB per image being decoded.
pub const DEFAULT_MAX_AREA: u64 = 178_956_970;

/// The image settings of a `pack` run.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageOptions {
    /// Target size (ignored by `ResizeMode::No`).
    pub size: Size,
    /// How images are fitted to `size`.
    pub mode: ResizeMode,
    /// Only shrink: images already within `size` keep their size (and are not cropped
    /// or padded), as img2dataset's `resize_only_if_bigger`.
    pub only_if_bigger: bool,
    /// Encoding of the images written.
    pub format: OutputFormat,
    /// JPEG quality (1–100) or PNG compression level (0–9), as img2dataset's
    /// `encode_quality`.
    pub quality: u8,
    /// Images whose smaller side is below this are left out.
    pub min_size: u32,
    /// Images of more pixels than this are left out before they are decoded.
    pub max_area: u64,
    /// Images whose longer side divided by their shorter side exceeds this are left out.
    pub max_aspect_ratio: f64,
    /// Keep the original bytes when the image needs no change (same format, no resize,
    /// no orientation, no alpha to flatten).
    pub skip_reencode: bool,
    /// Encoded images or pixel arrays.
    pub store: StoreAs,
    /// Decode JPEGs at full scale even when they shrink enough for a reduced one.
    pub full_decode: bool,
}

impl Default for ImageOptions {
    fn default() -> Self {
        Self {
            size: Size {
                width: 256,
                height: 256,
            },
            mode: ResizeMode::Border,
            only_if_bigger: false,
            format: OutputFormat::Jpeg,
            quality: 95,
            min_size: 0,
            max_area: DEFAULT_MAX_AREA,
            max_aspect_ratio: f64::INFINITY,
            skip_reencode: false,
            store: StoreAs::Encoded,
            full_decode: false,
        }
    }
}

impl ImageOptions {
    /// Checks the options before any image is read.
    pub fn check(&self) -> Result<(), OptionError> {
        match self.format {
            OutputFormat::Jpeg if !(1..=100).contains(&self.quality) => {
                return Err(OptionError::JpegQuality(self.quality));
            }
            OutputFormat::Png if self.quality > 9 => {
                return Err(OptionError::PngLevel(self.quality));
            }
            _ => {}
        }
        if self.max_area == 0 {
            return Err(OptionError::MaxArea);
        }
        if self.max_aspect_ratio.is_nan() || self.max_aspect_ratio < 1.0 {
            return Err(OptionError::AspectRatio(self.max_aspect_ratio));
        }
        Ok(())
    }

    /// The extension a field holding an image gets (`jpg`, `png`, `webp`, `npy`).
    pub fn output_ext(&self) -> &'static str {
        match self.store {
            StoreAs::Tensor => "npy",
            StoreAs::Encoded => self.format.ext(),
        }
    }

    /// The options as recorded in the manifest (they decide the output bytes).
    pub fn to_json(&self) -> Value {
        json!({
            "size": self.size.to_string(),
            "resize_mode": self.mode.name(),
            "resize_only_if_bigger": self.only_if_bigger,
            "format": self.format.ext(),
            "quality": self.quality,
            "min_image_size": self.min_size,
            "max_image_area": self.max_area,
            "max_aspect_ratio": if self.max_aspect_ratio.is_finite() {
                Value::from(self.max_aspect_ratio)
            } else {
                Value::Null
            },
            "skip_reencode": self.skip_reencode,
            "as": match self.store { StoreAs::Encoded => "image", StoreAs::Tensor => "tensor" },
            "full_decode": self.full_decode,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(
            Size::parse("256").unwrap(),
            Size {
                width: 256,
                height: 256
            }
        );
        assert_eq!(
            Size::parse("320x240").unwrap(),
            Size {
                width: 320,
                height: 240
            }
        );
        for bad in ["0", "x", "256x", "70000", "-1", "1.5"] {
            assert!(Size::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quality_is_checked_per_format() {
        let mut o = ImageOptions::default();
        o.check().unwrap();
        o.format = OutputFormat::Png;
        assert!(o.check().unwrap_err().to_string().contains("0 to 9"));
        o.quality = 9;
        o.check().unwrap();
        o.max_aspect_ratio = 0.5;
        assert!(o.check().is_err());
    }
}
