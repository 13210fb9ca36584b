//! JPEG specifics: what a frame header declares, and decoding at a reduced DCT scale.
//!
//! A JPEG that is going to shrink to a quarter or less of its size on both sides is
//! decoded at 1/2, 1/4 or 1/8 scale by libjpeg-turbo's scaled inverse DCT (through the `mozjpeg`
//! crate, which builds it from source with the C compiler every Rust build already has;
//! its SIMD needs `nasm` at build time and is left out with a build warning without it).
//! Each 8 x 8 block then gives 4 x 4, 2 x 2 or 1 x 1 pixels: the entropy decoding is the
//! same, but the transform, colour conversion, upsampling, memory and the area resize that
//! follows shrink 4 to 64 times. OpenCV's `IMREAD_REDUCED_*` and Pillow's `draft()` do the
//! same. A JPEG that shrinks less is decoded in full by libjpeg-turbo too: it is about
//! 20 % faster than the image crate's decoder (zune-jpeg), and its upsampling is the one
//! OpenCV (so img2dataset) uses.
//!
//! Only 8-bit baseline and extended sequential (SOF0, SOF1) JPEGs with 1 or 3 components take
//! this path: progressive JPEGs (whose scan count an attacker controls), CMYK/YCCK and
//! arithmetic-coded ones go to the image crate, whose limits and colour handling the rest
//! of this crate relies on.

use std::panic::{AssertUnwindSafe, catch_unwind};

use image::RgbImage;

use crate::Error;

/// What a JPEG's frame header (SOFn) declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The SOF marker's second byte (0xC0 baseline, 0xC1 extended, 0xC2 progressive...).
    pub marker: u8,
    /// Bits per sample (8, or 12 in some extended JPEGs).
    pub precision: u8,
    /// Height, as declared.
    pub height: u16,
    /// Width, as declared.
    pub width: u16,
    /// Colour components (1 grey, 3 YCbCr, 4 CMYK/YCCK).
    pub components: u8,
}

/// The first frame header of `data`, if one comes before the first scan.
pub(crate) fn frame(data: &[u8]) -> Option<Frame> {
    let mut at = 2;
    while at + 4 <= data.len() {
        if data[at] != 0xFF {
            return None;
        }
        let marker = data[at + 1];
        if marker == 0xFF {
            at += 1; // fill byte
            continue;
        }
        let len = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC).
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let f = data.get(at + 4..at + 10)?;
            return Some(Frame {
                marker,
                precision: f[0],
                height: u16::from_be_bytes([f[1], f[2]]),
                width: u16::from_be_bytes([f[3], f[4]]),
                components: f[5],
            });
        }
        if marker == 0xDA {
            return None; // scan data before any frame header
        }
        at += 2 + len;
    }
    None
}

/// How many times the resize target each side of a reduced decode must stay. libjpeg's
/// scaled IDCT is a cruder low-pass than an area average over the full image: decoding
/// to just the target size costs up to 7 dB of PSNR against OpenCV on grainy photos
/// (28.5 dB worst case); keeping twice the target and area-averaging the rest keeps
/// every image of the benchmark corpus above 34 dB and real photos above 42 dB.
const MARGIN: u64 = 2;

/// The eighths (1, 2, 4, or 8 for full scale) to decode `frame` at so that both sides
/// stay at least `MARGIN` times `need_w` x `need_h` (as stored, before any EXIF
/// rotation); `None` when the JPEG is not one this path takes.
pub(crate) fn reduced_scale(frame: Frame, need_w: u32, need_h: u32) -> Option<u8> {
    if !matches!(frame.marker, 0xC0 | 0xC1)
        || frame.precision != 8
        || !matches!(frame.components, 1 | 3)
    {
        return None;
    }
    let (w, h) = (u32::from(frame.width), u32::from(frame.height));
    let fits = |n: u8| {
        let (sw, sh) = scaled(w, h, n);
        u64::from(sw) >= MARGIN * u64::from(need_w) && u64::from(sh) >= MARGIN * u64::from(need_h)
    };
    Some([1u8, 2, 4].into_iter().find(|&n| fits(n)).unwrap_or(8))
}

/// libjpeg's output size at `n` eighths: each side rounded up.
pub(crate) fn scaled(w: u32, h: u32, n: u8) -> (u32, u32) {
    (
        (w * u32::from(n)).div_ceil(8),
        (h * u32::from(n)).div_ceil(8),
    )
}

/// Decodes `data` (whose frame is `frame`) at `n` eighths of its size, as 8-bit RGB;
/// libjpeg's failures are JPEG decode errors.
pub(crate) fn decode_reduced(data: &[u8], frame: Frame, n: u8) -> Result<RgbImage, Error> {
    let fail = |detail: String| Error::Decode {
        format: "jpeg",
        detail,
    };
    let (w, h) = scaled(u32::from(frame.width), u32::from(frame.height), n);
    // libjpeg reports a fatal error by unwinding out of the decoder (the crate's error
    // manager); it is caught here and becomes this image's reason. Nothing is shared
    // across the boundary but the output buffer, which is dropped on error.
    let decoded = catch_unwind(AssertUnwindSafe(|| -> std::io::Result<Vec<u8>> {
        let mut decoder = mozjpeg::Decompress::builder().from_mem(data)?;
        decoder.scale(n);
        let mut started = decoder.rgb()?;
        if (started.width(), started.height()) != (w as usize, h as usize) {
            return Err(std::io::Error::other(format!(
                "decodes to {} x {} at {n}/8 scale, not {w} x {h}",
                started.width(),
                started.height()
            )));
        }
        // Into fresh capacity: zeroing a buffer libjpeg overwrites cost 5 % of the time.
        let pixels = started.read_scanlines::<u8>()?;
        if pixels.len() != w as usize * h as usize * 3 {
            return Err(std::io::Error::other(format!(
                "{} of {h} rows decoded",
                pixels.len() / (w as usize * 3)
            )));
        }
        started.finish()?;
        Ok(pixels)
    }));
    let pixels = match decoded {
        Ok(Ok(pixels)) => pixels,
        Ok(Err(e)) => return Err(fail(e.to_string())),
        Err(panic) => {
            return Err(fail(
                crate::error::panic_message(&*panic).unwrap_or_else(|| "libjpeg failed".into()),
            ));
        }
    };
    RgbImage::from_raw(w, h, pixels).ok_or_else(|| fail("short pixel buffer".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg(w: u16, h: u16, progressive: bool) -> Vec<u8> {
        let pixels: Vec<u8> = (0..u32::from(w) * u32::from(h))
            .flat_map(|i| {
                let (x, y) = (i % u32::from(w), i / u32::from(w));
                [
                    (x * 255 / u32::from(w)) as u8,
                    (y * 255 / u32::from(h)) as u8,
                    90,
                ]
            })
            .collect();
        let mut out = Vec::new();
        let mut e = jpeg_encoder::Encoder::new(&mut out, 92);
        e.set_progressive(progressive);
        e.encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        out
    }

    #[test]
    fn the_frame_header_is_read_and_the_smallest_safe_scale_chosen() {
        let data = jpeg(1000, 600, false);
        let f = frame(&data).unwrap();
        assert_eq!(
            (f.marker, f.width, f.height, f.components),
            (0xC0, 1000, 600, 3)
        );
        // 1000 x 600 to cover twice 250 x 150: 1/2 (500 x 300); 1/4 would be 250 x 150.
        assert_eq!(reduced_scale(f, 250, 150), Some(4));
        assert_eq!(reduced_scale(f, 251, 150), Some(8));
        assert_eq!(reduced_scale(f, 125, 75), Some(2));
        assert_eq!(reduced_scale(f, 62, 37), Some(1));
        assert_eq!(reduced_scale(f, 427, 256), Some(8));
        // Progressive: the image crate's decoder, whatever the scale.
        let p = frame(&jpeg(64, 64, true)).unwrap();
        assert_eq!(p.marker, 0xC2);
        assert_eq!(reduced_scale(p, 8, 8), None);
    }

    #[test]
    fn reduced_decoding_gives_the_scaled_size_and_close_pixels() {
        let data = jpeg(203, 101, false);
        let f = frame(&data).unwrap();
        let img = decode_reduced(&data, f, 2).unwrap();
        // Rounded up: 203 / 4 = 50.75 -> 51, 101 / 4 = 25.25 -> 26.
        assert_eq!(img.dimensions(), (51, 26));
        let full = image::load_from_memory(&data).unwrap().to_rgb8();
        // The pixel at the centre of the reduced image against the full image's.
        let a = img.get_pixel(25, 13).0;
        let b = full.get_pixel(101, 51).0;
        for (x, y) in a.iter().zip(b) {
            assert!(x.abs_diff(y) <= 6, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn a_broken_jpeg_is_an_error_not_a_crash() {
        let mut data = jpeg(64, 64, false);
        let f = frame(&data).unwrap();
        // Cut inside the header: libjpeg's fatal error comes back as a message.
        data.truncate(120);
        let err = decode_reduced(&data, f, 4).unwrap_err();
        assert!(matches!(&err, Error::Decode { format: "jpeg", detail } if !detail.is_empty()));
        // Garbage after a valid header: decoded or refused, never a panic.
        let mut noisy = jpeg(64, 64, false);
        let len = noisy.len();
        for (i, b) in noisy[len / 2..len - 2].iter_mut().enumerate() {
            *b = (i * 7919 % 251) as u8;
        }
        let _ = decode_reduced(&noisy, f, 4);
    }
}
