//! `pack` image options: img2dataset's names and meanings.

use clap::{Args, ValueEnum};

use crate::size::parse_count;

/// How images are fitted to --image-size (img2dataset's resize_mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ResizeModeArg {
    /// Keep the size
    No,
    /// Smaller side to the size, ratio kept (covers the box)
    #[value(name = "keep_ratio", alias = "keep-ratio")]
    KeepRatio,
    /// Larger side to the size, ratio kept (fits in the box)
    #[value(name = "keep_ratio_largest", alias = "keep-ratio-largest")]
    KeepRatioLargest,
    /// As keep_ratio, then cut the centre to exactly the size
    #[value(name = "center_crop", alias = "center-crop")]
    CenterCrop,
    /// As keep_ratio_largest, then pad with white to exactly the size
    Border,
}

/// Encoding of the images written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImageFormatArg {
    /// Baseline JPEG, 4:2:0 (OpenCV's defaults)
    Jpg,
    /// PNG; alpha is kept
    Png,
    /// Lossless WebP
    Webp,
}

/// What an image field stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImageAsArg {
    /// An encoded image (--image-format)
    Image,
    /// Decoded pixels: uint8 height x width x 3 (.npy in webdataset and parquet, ndarray in mds)
    Tensor,
}

#[derive(Debug, Args)]
#[command(
    next_help_heading = "Images (any of these turns on decoding, resizing and re-encoding; img2dataset's names)"
)]
pub struct ImageArgs {
    /// Target size: N (a square) or WxH [default: 256]
    ///
    /// Each image field (jpg, jpeg, png, webp, gif, bmp, tif, tiff, or --image-fields)
    /// is decoded (EXIF orientation applied; CMYK, greyscale, palette, 16-bit converted
    /// to 8-bit RGB; alpha composited on white unless --image-format png; GIF: first
    /// frame), resized as --resize-mode says and re-encoded. Each sample's JSON gains
    /// width, height, original_width, original_height and source_format (mds, parquet:
    /// typed columns). Example: `--image-size 256 --resize-mode center_crop`.
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<String>,

    /// How images are fitted to --image-size [default: border, as img2dataset]
    ///
    /// Shrinking averages areas (OpenCV INTER_AREA), growing uses Lanczos, as
    /// img2dataset's defaults. Dimensions are img2dataset's to the pixel.
    #[arg(long, value_enum, value_name = "MODE")]
    pub resize_mode: Option<ResizeModeArg>,

    /// Only shrink: images within --image-size keep their size (no crop, no border)
    #[arg(long)]
    pub resize_only_if_bigger: bool,

    /// Encoding of the images written [default: jpg]; field names follow (x.png → x.jpg)
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub image_format: Option<ImageFormatArg>,

    /// JPEG quality 1-100 [default: 95]; for png the zlib level 0-9, as img2dataset
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8))]
    pub image_quality: Option<u8>,

    /// Leave out images whose smaller side is below N pixels [default: 0]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32))]
    pub min_image_size: Option<u32>,

    /// Leave out images of more than N pixels, refused from their header before decoding
    ///
    /// Guards against decompression bombs (a small file that declares 100000 x 100000
    /// pixels). The default is Pillow's DecompressionBombError threshold, 178,956,970
    /// pixels (537 MB as RGB). Example: `--max-image-area 50_000_000`.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_image_area: Option<u64>,

    /// Leave out images whose longer side / shorter side exceeds X [default: no limit]
    #[arg(long, value_name = "X")]
    pub max_aspect_ratio: Option<f64>,

    /// Keep the original bytes of images that need no change (same format, no resize,
    /// upright, no alpha to flatten)
    #[arg(long)]
    pub skip_reencode: bool,

    /// Decode every JPEG at full size before shrinking it, as OpenCV (so img2dataset) does
    ///
    /// By default a JPEG that shrinks to a quarter of its size or less is decoded at
    /// 1/2, 1/4 or 1/8 scale (libjpeg-turbo's scaled IDCT, as Pillow's `draft` and
    /// OpenCV's `IMREAD_REDUCED_*`), keeping twice the target size, then area-averaged:
    /// about 25% less CPU, pixels 42 dB PSNR from img2dataset's on average (34 dB on
    /// grainy photos). With this flag they are within re-encoding noise of its (56 dB).
    #[arg(long)]
    pub full_decode: bool,

    /// Fields that hold images, comma-separated [default: by extension]
    ///
    /// Example: `--image-fields image` for a Parquet column named `image`.
    #[arg(long, value_name = "LIST")]
    pub image_fields: Option<String>,

    /// Store encoded images or decoded pixel arrays [default: image]
    #[arg(long, value_enum, value_name = "KIND")]
    pub image_as: Option<ImageAsArg>,
}

impl ImageArgs {
    /// True when any image option is given.
    pub fn any(&self) -> bool {
        self.image_size.is_some()
            || self.resize_mode.is_some()
            || self.resize_only_if_bigger
            || self.image_format.is_some()
            || self.image_quality.is_some()
            || self.min_image_size.is_some()
            || self.max_image_area.is_some()
            || self.max_aspect_ratio.is_some()
            || self.skip_reencode
            || self.full_decode
            || self.image_fields.is_some()
            || self.image_as.is_some()
    }
}
