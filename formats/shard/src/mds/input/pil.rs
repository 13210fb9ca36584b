//! `pil` values (`u32 width, u32 height, u32 len(mode)`, the mode, then `Image.tobytes()`)
//! as PNG files: lossless for the modes PNG holds (`L`, `LA`, `RGB`, `RGBA`, 16-bit
//! grey `I;16`), and what a `png` column reads back as the same image.

use image::ExtendedColorType;
use image::ImageEncoder;
use image::codecs::png::PngEncoder;

use super::problem::Problem;

/// The PNG of a stored `pil` value.
pub(crate) fn to_png(stored: &[u8]) -> Result<Vec<u8>, Problem> {
    let corrupt = |why: String| Problem::Corrupt(why);
    let word = |at: usize| -> Result<u32, Problem> {
        stored
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| corrupt("ends inside its pil header".into()))
    };
    let (width, height, mode_len) = (word(0)?, word(4)?, word(8)? as usize);
    let mode = stored
        .get(12..12 + mode_len.min(stored.len()))
        .filter(|m| m.len() == mode_len)
        .ok_or_else(|| corrupt("ends inside its pil mode".into()))?;
    let mode = String::from_utf8_lossy(mode).into_owned();
    let pixels = &stored[12 + mode_len..];
    let (color, bytes_per_pixel) = match mode.as_str() {
        "L" => (ExtendedColorType::L8, 1),
        "LA" => (ExtendedColorType::La8, 2),
        "RGB" => (ExtendedColorType::Rgb8, 3),
        "RGBA" => (ExtendedColorType::Rgba8, 4),
        "I;16" => (ExtendedColorType::L16, 2),
        _ => {
            return Err(Problem::Unsupported(format!(
                "is a pil image of mode `{mode}`, which a PNG cannot hold losslessly (L, LA, RGB, RGBA and I;16 can)"
            )));
        }
    };
    let want = u64::from(width) * u64::from(height) * bytes_per_pixel;
    if want != pixels.len() as u64 {
        return Err(corrupt(format!(
            "holds {} bytes of pixels, a {width}x{height} {mode} image has {want}",
            pixels.len()
        )));
    }
    if width == 0 || height == 0 {
        return Err(Problem::Unsupported(format!(
            "is an empty {width}x{height} pil image, which a PNG cannot hold"
        )));
    }
    let native;
    let buf = if mode == "I;16" {
        // PIL's I;16 is little-endian; the encoder takes native-endian samples.
        native = pixels
            .chunks_exact(2)
            .flat_map(|c| u16::from_le_bytes([c[0], c[1]]).to_ne_bytes())
            .collect::<Vec<u8>>();
        &native[..]
    } else {
        pixels
    };
    let mut out = Vec::new();
    PngEncoder::new(&mut out)
        .write_image(buf, width, height, color)
        .map_err(|e| Problem::Unsupported(format!("cannot be written as a PNG: {e}")))?;
    Ok(out)
}
