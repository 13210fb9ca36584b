//! The formats images are decoded from, told by content ([`sniff`]) or extension.

use image::ImageFormat;

/// The formats images are decoded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// JPEG.
    Jpeg,
    /// PNG.
    Png,
    /// GIF (first frame).
    Gif,
    /// WebP.
    Webp,
    /// BMP.
    Bmp,
    /// TIFF.
    Tiff,
}

impl Kind {
    /// The format's usual extension, as content checks name it (`jpeg`, `png`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Jpeg => "jpeg",
            Kind::Png => "png",
            Kind::Gif => "gif",
            Kind::Webp => "webp",
            Kind::Bmp => "bmp",
            Kind::Tiff => "tiff",
        }
    }

    /// The format a field extension names (`jpg`, `seg.png`, `TIF`), if an image one.
    pub fn from_ext(ext: &str) -> Option<Kind> {
        let last = ext.rsplit('.').next().unwrap_or(ext).to_ascii_lowercase();
        Some(match last.as_str() {
            "jpg" | "jpeg" => Kind::Jpeg,
            "png" => Kind::Png,
            "gif" => Kind::Gif,
            "webp" => Kind::Webp,
            "bmp" => Kind::Bmp,
            "tif" | "tiff" => Kind::Tiff,
            _ => return None,
        })
    }

    pub(crate) fn image_format(self) -> ImageFormat {
        match self {
            Kind::Jpeg => ImageFormat::Jpeg,
            Kind::Png => ImageFormat::Png,
            Kind::Gif => ImageFormat::Gif,
            Kind::Webp => ImageFormat::WebP,
            Kind::Bmp => ImageFormat::Bmp,
            Kind::Tiff => ImageFormat::Tiff,
        }
    }
}

/// What an image is, from its first bytes (not its name).
pub fn sniff(data: &[u8]) -> Option<Kind> {
    Some(match image::guess_format(data).ok()? {
        ImageFormat::Jpeg => Kind::Jpeg,
        ImageFormat::Png => Kind::Png,
        ImageFormat::Gif => Kind::Gif,
        ImageFormat::WebP => Kind::Webp,
        ImageFormat::Bmp => Kind::Bmp,
        ImageFormat::Tiff => Kind::Tiff,
        _ => return None,
    })
}
