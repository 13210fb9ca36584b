//! Images as `pack --image-size` transforms them: the header checks (size, area, aspect
//! ratio, EXIF orientation), decoding by every decoder (the image crate's, libjpeg-turbo's
//! at a reduced scale for large baseline JPEGs), the resize geometry, area shrinking and
//! re-encoding. The first byte picks the declared kind, resize mode, target size and
//! output; the rest is the image. Whatever the bytes, an image is transformed or refused
//! with a reason, and a transformed one is what it claims to be.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_image::{ImageOptions, Kind, OutputFormat, ResizeMode, Size, StoreAs, transform};

const KINDS: [Kind; 6] = [
    Kind::Jpeg,
    Kind::Png,
    Kind::Gif,
    Kind::Webp,
    Kind::Bmp,
    Kind::Tiff,
];
const MODES: [ResizeMode; 5] = [
    ResizeMode::No,
    ResizeMode::KeepRatio,
    ResizeMode::KeepRatioLargest,
    ResizeMode::CenterCrop,
    ResizeMode::Border,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let pick = usize::from(pick);
    // The declared kind is the name's; half the time the sniffed one, as pack does.
    let kind = match pick & 1 {
        0 => shardsmith_image::sniff(file).unwrap_or(KINDS[pick / 2 % KINDS.len()]),
        _ => KINDS[pick / 2 % KINDS.len()],
    };
    let side = [1, 7, 16, 33][pick / 4 % 4];
    let options = ImageOptions {
        size: Size {
            width: side,
            height: side + u32::from(pick & 8 != 0),
        },
        mode: MODES[pick / 16 % MODES.len()],
        only_if_bigger: pick & 32 != 0,
        format: [OutputFormat::Jpeg, OutputFormat::Png][pick / 64 % 2],
        quality: if pick / 64 % 2 == 0 { 90 } else { 1 },
        skip_reencode: pick & 2 != 0,
        store: if pick >= 192 {
            StoreAs::Tensor
        } else {
            StoreAs::Encoded
        },
        // Bounded so the fuzzer's 256 MiB allocation limit tests the code, not the option.
        max_area: 1 << 20,
        ..ImageOptions::default()
    };
    options.check().expect("the picked options are valid");
    let Ok(out) = transform(file, kind, &options) else {
        return;
    };
    if out.kept_original {
        assert_eq!(out.bytes, file, "kept bytes are the original's");
        return;
    }
    let (w, h) = (out.width as usize, out.height as usize);
    assert!(w >= 1 && h >= 1, "{w} x {h}");
    match options.store {
        StoreAs::Tensor => {
            // A .npy header then exactly the pixels.
            assert!(out.bytes.starts_with(b"\x93NUMPY"));
            assert!(out.bytes.len() > w * h * 3 && out.bytes.len() - w * h * 3 <= 256);
        }
        StoreAs::Encoded => {
            let decoded = image::load_from_memory(&out.bytes).expect("our output decodes");
            assert_eq!((decoded.width(), decoded.height()), (out.width, out.height));
        }
    }
});
