//! 8-bit RGB or RGBA pixels: flattening alpha, resampling, cropping, padding, encoding.

use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::{ImageBuffer, ImageEncoder, RgbImage, Rgba, RgbaImage};

use crate::error::Error;
use crate::geometry::{Filter, Geometry};
use crate::options::OutputFormat;

/// Row-major, interleaved 8-bit pixels.
pub(crate) struct Pixels {
    data: Vec<u8>,
    width: u32,
    height: u32,
    channels: u32,
}

impl Pixels {
    pub(crate) fn rgb(image: RgbImage) -> Self {
        let (width, height) = image.dimensions();
        Self {
            data: image.into_raw(),
            width,
            height,
            channels: 3,
        }
    }

    pub(crate) fn rgba(image: RgbaImage) -> Self {
        let (width, height) = image.dimensions();
        Self {
            data: image.into_raw(),
            width,
            height,
            channels: 4,
        }
    }

    /// Alpha composited on white as img2dataset does it:
    /// `rint(alpha / 255 * colour + 255 - alpha)`, in float64.
    pub(crate) fn flattened(image: &ImageBuffer<Rgba<u8>, Vec<u8>>) -> Self {
        let (width, height) = image.dimensions();
        let mut data = Vec::with_capacity(image.len() / 4 * 3);
        for px in image.as_raw().chunks_exact(4) {
            let alpha = f64::from(px[3]);
            for &c in &px[..3] {
                let v = alpha / 255.0 * f64::from(c) + 255.0 - alpha;
                data.push(v.clamp(0.0, 255.0).round_ties_even() as u8);
            }
        }
        Self {
            data,
            width,
            height,
            channels: 3,
        }
    }

    /// Resizes, crops and pads as `geometry` says; a resizer's failure is an encode
    /// error of format `pixels`.
    pub(crate) fn apply(mut self, geometry: &Geometry) -> Result<Self, Error> {
        let mut crop = geometry.crop;
        if let Some((w, h, filter)) = geometry.resize {
            self = if filter == Filter::Area && w <= self.width && h <= self.height {
                // The crop that follows is computed as part of the shrink.
                self.shrunk(w, h, crop.take())
            } else {
                self.resized(w, h, filter)?
            };
        }
        if let Some((x, y, w, h)) = crop {
            self = self.cropped(x, y, w, h);
        }
        if let Some((left, top, w, h)) = geometry.pad {
            self = self.padded(left, top, w, h);
        }
        Ok(self)
    }

    fn pixel_type(&self) -> PixelType {
        if self.channels == 4 {
            PixelType::U8x4
        } else {
            PixelType::U8x3
        }
    }

    /// Area-averaged to `width` x `height`, then cut to `crop` (x, y, w, h) if given.
    fn shrunk(self, width: u32, height: u32, crop: Option<(u32, u32, u32, u32)>) -> Self {
        let window = crop.map(|(x, y, w, h)| (x as usize, y as usize, w as usize, h as usize));
        let data = crate::area::shrink(
            &self.data,
            (
                self.width as usize,
                self.height as usize,
                self.channels as usize,
            ),
            (width as usize, height as usize),
            window,
        );
        let (width, height) = crop.map_or((width, height), |(_, _, w, h)| (w, h));
        Self {
            data,
            width,
            height,
            channels: self.channels,
        }
    }

    /// Resized by fast_image_resize: growing (Lanczos), or shrinking one side while the
    /// other grows.
    fn resized(self, width: u32, height: u32, filter: Filter) -> Result<Self, Error> {
        let fail = |e: &dyn std::fmt::Display| Error::Encode {
            format: "pixels",
            detail: e.to_string(),
        };
        let pixel_type = self.pixel_type();
        let channels = self.channels;
        let src = Image::from_vec_u8(self.width, self.height, self.data, pixel_type)
            .map_err(|e| fail(&e))?;
        let mut dst = Image::new(width, height, pixel_type);
        let algorithm = match filter {
            // Only when one side grows (never with img2dataset's geometry).
            Filter::Area => ResizeAlg::Convolution(FilterType::Bilinear),
            Filter::Lanczos => ResizeAlg::Convolution(FilterType::Lanczos3),
        };
        RESIZER
            .with_borrow_mut(|r| {
                r.resize(&src, &mut dst, &ResizeOptions::new().resize_alg(algorithm))
            })
            .map_err(|e| fail(&e))?;
        Ok(Self {
            data: dst.into_vec(),
            width,
            height,
            channels,
        })
    }

    fn cropped(self, x: u32, y: u32, width: u32, height: u32) -> Self {
        let c = self.channels as usize;
        let stride = self.width as usize * c;
        let mut data = Vec::with_capacity(width as usize * height as usize * c);
        for row in y as usize..(y + height) as usize {
            let start = row * stride + x as usize * c;
            data.extend_from_slice(&self.data[start..start + width as usize * c]);
        }
        Self {
            data,
            width,
            height,
            channels: self.channels,
        }
    }

    fn padded(self, left: u32, top: u32, width: u32, height: u32) -> Self {
        let c = self.channels as usize;
        let mut data = vec![255u8; width as usize * height as usize * c];
        let (src_stride, dst_stride) = (self.width as usize * c, width as usize * c);
        for row in 0..self.height as usize {
            let dst = (top as usize + row) * dst_stride + left as usize * c;
            data[dst..dst + src_stride]
                .copy_from_slice(&self.data[row * src_stride..(row + 1) * src_stride]);
        }
        Self {
            data,
            width,
            height,
            channels: self.channels,
        }
    }

    /// A `.npy` file (version 1.0) of the pixels as a uint8 `(height, width, channels)`
    /// array.
    pub(crate) fn npy(&self) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '|u1', 'fortran_order': False, 'shape': ({}, {}, {}), }}",
            self.height, self.width, self.channels
        );
        // Magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64.
        let unpadded = 10 + dict.len() + 1;
        let total = unpadded.div_ceil(64) * 64;
        let mut out = Vec::with_capacity(total + self.data.len());
        out.extend_from_slice(b"\x93NUMPY\x01\x00");
        out.extend_from_slice(&((total - 10) as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        out.extend_from_slice(&self.data);
        out
    }

    /// Encodes the pixels.
    pub(crate) fn encode(&self, format: OutputFormat, quality: u8) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let color = if self.channels == 4 {
            image::ExtendedColorType::Rgba8
        } else {
            image::ExtendedColorType::Rgb8
        };
        let fail = |format: &'static str| move |e: String| Error::Encode { format, detail: e };
        match format {
            OutputFormat::Jpeg => {
                let (w, h) = (
                    u16::try_from(self.width)
                        .map_err(|_| fail("JPEG")("wider than 65535".into()))?,
                    u16::try_from(self.height)
                        .map_err(|_| fail("JPEG")("taller than 65535".into()))?,
                );
                let mut encoder = jpeg_encoder::Encoder::new(&mut out, quality);
                // OpenCV's and libjpeg's defaults: 4:2:0, chroma averaged, standard
                // Huffman tables, baseline.
                encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
                encoder
                    .set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
                let color = if self.channels == 4 {
                    jpeg_encoder::ColorType::Rgba
                } else {
                    jpeg_encoder::ColorType::Rgb
                };
                encoder
                    .encode(&self.data, w, h, color)
                    .map_err(|e| fail("JPEG")(e.to_string()))?;
            }
            OutputFormat::Png => {
                use image::codecs::png::{CompressionType, FilterType, PngEncoder};
                let compression = match quality {
                    0 => CompressionType::Uncompressed,
                    n => CompressionType::Level(n.min(9)),
                };
                PngEncoder::new_with_quality(&mut out, compression, FilterType::Adaptive)
                    .write_image(&self.data, self.width, self.height, color)
                    .map_err(|e| fail("PNG")(e.to_string()))?;
            }
            OutputFormat::Webp => {
                image::codecs::webp::WebPEncoder::new_lossless(&mut out)
                    .write_image(&self.data, self.width, self.height, color)
                    .map_err(|e| fail("WebP")(e.to_string()))?;
            }
        }
        Ok(out)
    }
}

thread_local! {
    /// One resizer per thread: it keeps its scratch buffers from one image to the next.
    static RESIZER: std::cell::RefCell<Resizer> = std::cell::RefCell::new(Resizer::new());
}
