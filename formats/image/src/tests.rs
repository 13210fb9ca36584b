use std::io::Cursor;

use image::{
    DynamicImage, ImageDecoder, ImageEncoder, ImageFormat, ImageReader, Rgb, RgbImage, Rgba,
    RgbaImage,
};

use super::*;

fn png(image: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

/// A JPEG with an EXIF orientation tag (a big-endian TIFF with one IFD entry).
fn jpeg_with_orientation(image: &RgbImage, orientation: u16) -> Vec<u8> {
    let mut exif = b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01".to_vec();
    exif.extend_from_slice(&orientation.to_be_bytes());
    exif.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 95);
    encoder.add_exif_metadata(&exif).unwrap();
    let (w, h) = image.dimensions();
    encoder
        .encode(
            image.as_raw(),
            w as u16,
            h as u16,
            jpeg_encoder::ColorType::Rgb,
        )
        .unwrap();
    out
}

fn decode(bytes: &[u8]) -> RgbImage {
    image::load_from_memory(bytes).unwrap().to_rgb8()
}

fn keep(format: OutputFormat) -> ImageOptions {
    ImageOptions {
        mode: ResizeMode::No,
        format,
        quality: if format == OutputFormat::Png { 6 } else { 95 },
        ..ImageOptions::default()
    }
}

/// 40 x 20, grey, with a red 10 x 10 block in the top-left corner.
fn marked() -> RgbImage {
    RgbImage::from_fn(40, 20, |x, y| {
        if x < 10 && y < 10 {
            Rgb([250, 0, 0])
        } else {
            Rgb([128, 128, 128])
        }
    })
}

#[test]
fn exif_orientation_is_applied_and_dropped() {
    // 6: the stored image is shown rotated 90 degrees clockwise: the red corner ends up
    // top-right of a 20 x 40 image.
    let bytes = jpeg_with_orientation(&marked(), 6);
    let out = transform(&bytes, Kind::Jpeg, &keep(OutputFormat::Png)).unwrap();
    assert_eq!((out.width, out.height), (20, 40));
    assert_eq!((out.original_width, out.original_height), (20, 40));
    let px = decode(&out.bytes);
    assert_eq!(px.dimensions(), (20, 40));
    assert!(px.get_pixel(15, 3)[0] > 200, "{:?}", px.get_pixel(15, 3));
    assert!(px.get_pixel(3, 3)[0] < 160);
    // Re-encoded without the tag: readers that ignore EXIF see the same thing.
    let decoder = ImageReader::new(Cursor::new(&out.bytes))
        .with_guessed_format()
        .unwrap();
    let mut decoder = decoder.into_decoder().unwrap();
    assert_eq!(
        decoder.orientation().unwrap(),
        image::metadata::Orientation::NoTransforms
    );
    // Every orientation gives the same upright picture.
    for o in 1..=8u16 {
        let out = transform(
            &jpeg_with_orientation(&marked(), o),
            Kind::Jpeg,
            &keep(OutputFormat::Png),
        )
        .unwrap();
        let rotated = (5..=8).contains(&o);
        assert_eq!(
            (out.width, out.height),
            if rotated { (20, 40) } else { (40, 20) },
            "orientation {o}"
        );
    }
}

#[test]
fn alpha_is_flattened_on_white_as_img2dataset_does() {
    let rgba = RgbaImage::from_pixel(4, 4, Rgba([200, 100, 0, 128]));
    let bytes = png(&DynamicImage::ImageRgba8(rgba));
    let out = transform(
        &bytes,
        Kind::Png,
        &ImageOptions {
            store: StoreAs::Tensor,
            ..keep(OutputFormat::Jpeg)
        },
    )
    .unwrap();
    // rint(128/255*200 + 255 - 128) = rint(227.39) = 227; 0 -> 127.
    let data = &out.bytes[out.bytes.len() - 48..];
    assert_eq!(&data[..3], &[227, 177, 127]);
    // Kept with PNG output.
    let out = transform(&bytes, Kind::Png, &keep(OutputFormat::Png)).unwrap();
    let back = image::load_from_memory(&out.bytes).unwrap();
    assert_eq!(back.to_rgba8().get_pixel(0, 0), &Rgba([200, 100, 0, 128]));
}

#[test]
fn npy_holds_height_width_3_uint8() {
    let out = transform(
        &png(&DynamicImage::ImageRgb8(marked())),
        Kind::Png,
        &ImageOptions {
            store: StoreAs::Tensor,
            ..keep(OutputFormat::Jpeg)
        },
    )
    .unwrap();
    let b = &out.bytes;
    assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
    let header = u16::from_le_bytes([b[8], b[9]]) as usize;
    assert_eq!((10 + header) % 64, 0);
    let dict = std::str::from_utf8(&b[10..10 + header]).unwrap();
    assert!(dict.contains("'shape': (20, 40, 3)"), "{dict}");
    assert_eq!(b.len() - 10 - header, 20 * 40 * 3);
    assert_eq!(&b[10 + header..10 + header + 3], &[250, 0, 0]);
}

#[test]
fn sixteen_bit_grey_and_palette_become_rgb() {
    let grey16 = image::ImageBuffer::<image::Luma<u16>, _>::from_pixel(3, 2, image::Luma([65535]));
    let bytes = png(&DynamicImage::ImageLuma16(grey16));
    let out = transform(
        &bytes,
        Kind::Png,
        &ImageOptions {
            store: StoreAs::Tensor,
            ..keep(OutputFormat::Jpeg)
        },
    )
    .unwrap();
    assert!(out.bytes.ends_with(&[255; 18]));
}

/// PNG bytes whose header declares `w` x `h` (CRC fixed up).
fn png_declaring(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = png(&DynamicImage::ImageRgb8(RgbImage::new(1, 1)));
    bytes[16..20].copy_from_slice(&w.to_be_bytes());
    bytes[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn a_bomb_is_refused_from_its_header() {
    let bomb = png_declaring(100_000, 100_000);
    assert!(bomb.len() < 100);
    let err = transform(&bomb, Kind::Png, &ImageOptions::default()).unwrap_err();
    assert_eq!(
        err,
        Error::TooManyPixels {
            width: 100_000,
            height: 100_000,
            pixels: 10_000_000_000,
            limit: DEFAULT_MAX_AREA
        }
    );
    assert!(err.to_string().contains("decompression bomb"));
}

#[test]
fn limits_on_size_and_shape() {
    let bytes = png(&DynamicImage::ImageRgb8(marked()));
    let small = ImageOptions {
        min_size: 21,
        ..ImageOptions::default()
    };
    assert!(matches!(
        transform(&bytes, Kind::Png, &small),
        Err(Error::TooSmall { min: 21, .. })
    ));
    let narrow = ImageOptions {
        max_aspect_ratio: 1.5,
        ..ImageOptions::default()
    };
    let err = transform(&bytes, Kind::Png, &narrow).unwrap_err();
    assert!(err.to_string().contains("aspect ratio 2.00"), "{err}");
}

#[test]
fn skip_reencode_keeps_bytes_only_when_nothing_changes() {
    let bytes = jpeg_with_orientation(&marked(), 1);
    let mut o = keep(OutputFormat::Jpeg);
    o.skip_reencode = true;
    let out = transform(&bytes, Kind::Jpeg, &o).unwrap();
    assert!(out.kept_original);
    assert_eq!(out.bytes, bytes);
    // Rotated: the pixels change, so it is encoded.
    let rotated = jpeg_with_orientation(&marked(), 6);
    assert!(!transform(&rotated, Kind::Jpeg, &o).unwrap().kept_original);
    // CMYK: decoded differently by every library, so re-encoded as RGB.
    let mut cmyk = Vec::new();
    jpeg_encoder::Encoder::new(&mut cmyk, 90)
        .encode(
            &[0, 0, 0, 0].repeat(16 * 8),
            16,
            8,
            jpeg_encoder::ColorType::Cmyk,
        )
        .unwrap();
    assert_eq!(super::jpeg::frame(&cmyk).unwrap().components, 4);
    assert_eq!(super::jpeg::frame(&bytes).unwrap().components, 3);
    let out = transform(&cmyk, Kind::Jpeg, &o).unwrap();
    assert!(!out.kept_original);
    assert_eq!(super::jpeg::frame(&out.bytes).unwrap().components, 3);
    // 16-bit: brought to 8 bits, so encoded.
    let mut p = keep(OutputFormat::Png);
    p.skip_reencode = true;
    let deep = png(&DynamicImage::ImageRgb16(image::ImageBuffer::from_pixel(
        8,
        8,
        image::Rgb([40_000u16, 2, 65_535]),
    )));
    assert!(!transform(&deep, Kind::Png, &p).unwrap().kept_original);
    let flat = png(&DynamicImage::ImageRgb8(marked()));
    assert!(transform(&flat, Kind::Png, &p).unwrap().kept_original);
    // Another format: encoded.
    o.format = OutputFormat::Png;
    o.quality = 6;
    assert!(!transform(&bytes, Kind::Jpeg, &o).unwrap().kept_original);
}

#[test]
fn resized_jpeg_has_the_planned_size_and_close_pixels() {
    let photo = RgbImage::from_fn(600, 400, |x, y| {
        Rgb([(x / 3) as u8, (y / 2) as u8, ((x + y) / 5) as u8])
    });
    let bytes = png(&DynamicImage::ImageRgb8(photo.clone()));
    for (mode, want) in [
        (ResizeMode::CenterCrop, (256, 256)),
        (ResizeMode::KeepRatio, (384, 256)),
        (ResizeMode::KeepRatioLargest, (256, 171)),
        (ResizeMode::Border, (256, 256)),
    ] {
        let o = ImageOptions {
            mode,
            ..ImageOptions::default()
        };
        let out = transform(&bytes, Kind::Png, &o).unwrap();
        assert_eq!((out.width, out.height), want, "{mode:?}");
        let px = decode(&out.bytes);
        assert_eq!(px.dimensions(), want);
    }
    // A smooth gradient survives shrinking: the centre pixel of the 384 x 256 image is
    // near the centre of the source.
    let o = ImageOptions {
        mode: ResizeMode::KeepRatio,
        ..ImageOptions::default()
    };
    let px = decode(&transform(&bytes, Kind::Png, &o).unwrap().bytes);
    let (a, b) = (px.get_pixel(192, 128), photo.get_pixel(300, 200));
    for c in 0..3 {
        assert!(a[c].abs_diff(b[c]) <= 3, "{a:?} vs {b:?}");
    }
}

#[test]
fn large_jpegs_decode_at_a_reduced_scale_unless_full_decode() {
    // Fine detail (a 1-pixel checkerboard on a gradient) is where the decoding scale
    // shows: a reduced IDCT filters it differently from an area average of every pixel.
    let photo = RgbImage::from_fn(1200, 800, |x, y| {
        let fine = if (x + y) % 2 == 0 { 40 } else { 0 };
        Rgb([(x / 6) as u8 + fine, (y / 4) as u8, 90 + fine])
    });
    let mut bytes = Vec::new();
    jpeg_encoder::Encoder::new(&mut bytes, 90)
        .encode(photo.as_raw(), 1200, 800, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    let tensor = |full_decode| {
        let o = ImageOptions {
            size: Size {
                width: 100,
                height: 100,
            },
            mode: ResizeMode::CenterCrop,
            store: StoreAs::Tensor,
            full_decode,
            ..ImageOptions::default()
        };
        let out = transform(&bytes, Kind::Jpeg, &o).unwrap();
        assert_eq!((out.width, out.height), (100, 100));
        out.bytes[out.bytes.len() - 100 * 100 * 3..].to_vec()
    };
    // 1/4 scale (300 x 200, twice 150 x 100) against full scale: same size, close
    // pixels, not the same pixels.
    let (reduced, full) = (tensor(false), tensor(true));
    assert_ne!(reduced, full);
    let mse = reduced
        .iter()
        .zip(&full)
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
        .sum::<f64>()
        / reduced.len() as f64;
    let psnr = 10.0 * (255.0f64.powi(2) / mse).log10();
    assert!(psnr > 30.0, "{psnr}");
    // And full scale is the area average of the image crate's own full decode.
    let whole = decode(&bytes);
    let expect = crate::area::shrink(
        whole.as_raw(),
        (1200, 800, 3),
        (150, 100),
        Some((25, 0, 100, 100)),
    );
    let worst = expect
        .iter()
        .zip(&full)
        .map(|(&a, &b)| a.abs_diff(b))
        .max()
        .unwrap();
    assert!(worst <= 6, "{worst}");
}

#[test]
fn animated_gif_gives_its_first_frame() {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame};
    let mut bytes = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut bytes);
        for colour in [[255, 0, 0, 255], [0, 0, 255, 255]] {
            let frame = Frame::from_parts(
                RgbaImage::from_pixel(8, 8, Rgba(colour)),
                0,
                0,
                Delay::from_numer_denom_ms(100, 1),
            );
            encoder.encode_frame(frame).unwrap();
        }
    }
    assert_eq!(sniff(&bytes), Some(Kind::Gif));
    let out = transform(&bytes, Kind::Gif, &keep(OutputFormat::Png)).unwrap();
    assert_eq!(decode(&out.bytes).get_pixel(4, 4), &Rgb([255, 0, 0]));
}

#[test]
fn sniffing_ignores_the_name() {
    let bytes = png(&DynamicImage::ImageRgb8(marked()));
    assert_eq!(sniff(&bytes), Some(Kind::Png));
    assert_eq!(sniff(b"hello, world"), None);
    assert_eq!(Kind::from_ext("seg.JPG"), Some(Kind::Jpeg));
    assert_eq!(Kind::from_ext("json"), None);
    let mut webp = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut webp)
        .write_image(marked().as_raw(), 40, 20, image::ExtendedColorType::Rgb8)
        .unwrap();
    assert_eq!(sniff(&webp), Some(Kind::Webp));
    let out = transform(&webp, Kind::Webp, &ImageOptions::default()).unwrap();
    assert_eq!((out.width, out.height, out.source), (256, 256, Kind::Webp));
}

#[test]
fn garbage_with_an_image_signature_is_a_decode_error() {
    let mut bytes = png(&DynamicImage::ImageRgb8(marked()));
    let n = bytes.len();
    bytes.truncate(n / 2);
    let err = transform(&bytes, Kind::Png, &ImageOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Decode { format: "png", .. }), "{err}");
}

#[test]
fn a_panic_inside_a_decoder_is_this_images_error() {
    let err = super::guarded(Kind::Png, || -> Result<(), Error> {
        panic!("index out of range")
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "png does not decode: the decoder failed on malformed data (index out of range)"
    );
}
