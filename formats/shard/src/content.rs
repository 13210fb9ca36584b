//! Content checks on sample fields before they are packed, chosen by the last component
//! of the field name (`seg.png` is checked as PNG, as webdataset's decoders would).
//!
//! - `cheap` (default): JSON must parse; JPEG, PNG, WebP and GIF must have their
//!   start and end markers (a truncated image fails here); image and JSON fields must not
//!   be empty. Cost: a JSON parse of `.json` fields, O(1) per image.
//! - `full`: additionally decodes JPEG and PNG pixels.
//! - `none`: no checks.

use serde::{Deserialize, Serialize};

/// How thoroughly field contents are checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validation {
    /// No checks.
    None,
    /// Markers and JSON syntax.
    #[default]
    Cheap,
    /// Also decode images.
    Full,
}

/// What is wrong with a field's content; the text completes "`path` ...".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContentError {
    /// A JSON field with no bytes.
    #[error("is empty, which is not valid JSON")]
    EmptyJson,
    /// A JSON field that does not parse.
    #[error("is not valid JSON: {0}")]
    Json(serde_json::Error),
    /// An image field with no bytes.
    #[error("is empty, which is not a valid image")]
    EmptyImage,
    /// A `.jpg` without the start-of-image marker.
    #[error("is not a JPEG (no start-of-image marker)")]
    NotJpeg,
    /// A JPEG whose tail is all zero bytes.
    #[error("JPEG ends in a run of zero bytes: truncated or zero-filled")]
    JpegZeroFilled,
    /// A JPEG without the end-of-image marker.
    #[error("JPEG has no end-of-image marker: the file is truncated")]
    JpegTruncated,
    /// A `.png` without the PNG signature.
    #[error("is not a PNG (bad signature)")]
    NotPng,
    /// A PNG without its IEND chunk.
    #[error("PNG has no IEND chunk at its end: the file is truncated")]
    PngTruncated,
    /// A `.webp` without the RIFF/WEBP header.
    #[error("is not a WebP (bad RIFF header)")]
    NotWebp,
    /// A WebP whose header size disagrees with the file's.
    #[error("WebP header declares {declared} bytes but the file has {len}: truncated or padded")]
    WebpSize {
        /// Size the RIFF header declares (plus its 8 bytes).
        declared: u64,
        /// Size of the field.
        len: u64,
    },
    /// A `.gif` without the GIF signature.
    #[error("is not a GIF (bad signature)")]
    NotGif,
    /// A GIF without its trailer byte.
    #[error("GIF has no trailer byte: the file is truncated")]
    GifTruncated,
    /// A full decode of the pixels failed.
    #[error(transparent)]
    Image(#[from] shardsmith_image::Error),
}

/// Bytes kept from each end of a streamed field for the marker checks.
pub const EDGE: usize = 16;

fn kind(ext: &str) -> &str {
    ext.rsplit('.').next().unwrap_or(ext)
}

/// True when `ext` gets any check at `level` (large fields are then pre-read).
pub fn is_checked(ext: &str, level: Validation) -> bool {
    level != Validation::None
        && matches!(kind(ext), "json" | "jpg" | "jpeg" | "png" | "webp" | "gif")
}

/// Checks a field held in memory; the error says what is wrong.
pub fn check(ext: &str, data: &[u8], level: Validation) -> Result<(), ContentError> {
    if level == Validation::None {
        return Ok(());
    }
    if kind(ext) == "json" {
        return check_json(serde_json::from_slice::<serde::de::IgnoredAny>(data).map(|_| ()));
    }
    let head = &data[..data.len().min(EDGE)];
    let tail = &data[data.len().saturating_sub(EDGE)..];
    check_edges(ext, head, tail, data.len() as u64, trailing_zeros(data))?;
    if level == Validation::Full {
        let format = match kind(ext) {
            "jpg" | "jpeg" => shardsmith_image::Kind::Jpeg,
            "png" => shardsmith_image::Kind::Png,
            _ => return Ok(()),
        };
        // Guarded: a decoder's panic on a malformed image is this field's error.
        shardsmith_image::validate(data, format)?;
    }
    Ok(())
}

/// Checks a JSON field read as a stream.
pub fn check_json_stream(reader: impl std::io::Read) -> Result<(), ContentError> {
    check_json(
        serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(reader))
            .map(|_| ()),
    )
}

fn check_json(result: serde_json::Result<()>) -> Result<(), ContentError> {
    result.map_err(|e| {
        if e.is_eof() && e.line() == 1 && e.column() == 0 {
            ContentError::EmptyJson
        } else {
            ContentError::Json(e)
        }
    })
}

fn trailing_zeros(data: &[u8]) -> usize {
    data.iter().rev().take_while(|&&b| b == 0).count()
}

/// Streaming content check of a large field: JSON parsed from the stream, images
/// checked from their first and last bytes (a raw file, a tar member), in one pass.
pub fn check_stream(
    ext: &str,
    mut reader: impl std::io::Read,
) -> std::io::Result<Result<(), ContentError>> {
    if ext.rsplit('.').next() == Some("json") {
        return Ok(check_json_stream(reader));
    }
    let (mut head, mut tail) = (Vec::with_capacity(EDGE), Vec::with_capacity(2 * EDGE));
    let (mut zeros, mut total) = (0usize, 0u64);
    let mut block = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &block[..n];
        total += n as u64;
        let take = (EDGE - head.len()).min(n);
        head.extend_from_slice(&chunk[..take]);
        tail.extend_from_slice(&chunk[n.saturating_sub(EDGE)..]);
        tail.drain(..tail.len().saturating_sub(EDGE));
        let trailing = chunk.iter().rev().take_while(|&&b| b == 0).count();
        zeros = if trailing == n { zeros + n } else { trailing };
    }
    Ok(check_edges(ext, &head, &tail, total, zeros))
}

/// Marker checks from the first and last bytes of a field (`zeros` = trailing NUL
/// bytes, which some encoders pad JPEGs with).
pub fn check_edges(
    ext: &str,
    head: &[u8],
    tail: &[u8],
    len: u64,
    zeros: usize,
) -> Result<(), ContentError> {
    let k = kind(ext);
    if !matches!(k, "jpg" | "jpeg" | "png" | "webp" | "gif") {
        return Ok(());
    }
    if len == 0 {
        return Err(ContentError::EmptyImage);
    }
    match k {
        "jpg" | "jpeg" => {
            if !head.starts_with(&[0xff, 0xd8, 0xff]) {
                return Err(ContentError::NotJpeg);
            }
            let end = tail.len().saturating_sub(zeros.min(tail.len()));
            if end < 2 || tail[end - 2..end] != [0xff, 0xd9] {
                if zeros >= tail.len() {
                    return Err(ContentError::JpegZeroFilled);
                }
                return Err(ContentError::JpegTruncated);
            }
        }
        "png" => {
            if !head.starts_with(b"\x89PNG\r\n\x1a\n") {
                return Err(ContentError::NotPng);
            }
            if !tail.ends_with(b"\0\0\0\0IEND\xaeB`\x82") {
                return Err(ContentError::PngTruncated);
            }
        }
        "webp" => {
            if head.len() < 12 || &head[..4] != b"RIFF" || &head[8..12] != b"WEBP" {
                return Err(ContentError::NotWebp);
            }
            let declared = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]])) + 8;
            if declared != len && declared + 1 != len {
                return Err(ContentError::WebpSize { declared, len });
            }
        }
        _ => {
            if !head.starts_with(b"GIF87a") && !head.starts_with(b"GIF89a") {
                return Err(ContentError::NotGif);
            }
            if tail.last() != Some(&0x3b) {
                return Err(ContentError::GifTruncated);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_png() -> Vec<u8> {
        let mut out = Vec::new();
        image::RgbImage::from_pixel(2, 2, image::Rgb([1, 2, 3]))
            .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    fn tiny_jpeg() -> Vec<u8> {
        let mut out = Vec::new();
        image::RgbImage::from_pixel(8, 8, image::Rgb([9, 200, 3]))
            .write_to(
                &mut std::io::Cursor::new(&mut out),
                image::ImageFormat::Jpeg,
            )
            .unwrap();
        out
    }

    #[test]
    fn good_files_pass_every_level() {
        for level in [Validation::None, Validation::Cheap, Validation::Full] {
            check("png", &tiny_png(), level).unwrap();
            check("seg.png", &tiny_png(), level).unwrap();
            check("jpg", &tiny_jpeg(), level).unwrap();
            check("json", br#"{"label": 3}"#, level).unwrap();
            check("txt", b"", level).unwrap();
        }
    }

    #[test]
    fn damage_is_named() {
        let png = tiny_png();
        let jpg = tiny_jpeg();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("png", png[..png.len() - 5].to_vec(), "IEND"),
            ("png", b"GIF89a".to_vec(), "not a PNG"),
            ("jpg", jpg[..jpg.len() / 2].to_vec(), "end-of-image"),
            ("jpeg", vec![], "empty"),
            ("json", b"{\"a\": ".to_vec(), "not valid JSON"),
            ("json", vec![], "empty"),
            (
                "webp",
                b"RIFF\x10\0\0\0WEBPVP8 ".to_vec(),
                "declares 24 bytes",
            ),
        ];
        for (ext, data, want) in cases {
            let err = check(ext, &data, Validation::Cheap)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{ext}: {err}");
        }
        let mut zero_filled = jpg.clone();
        let n = zero_filled.len();
        zero_filled[n - 600..].fill(0);
        assert!(
            check("jpg", &zero_filled, Validation::Cheap)
                .unwrap_err()
                .to_string()
                .contains("zero")
        );
        let mut corrupt = jpg.clone();
        for b in &mut corrupt[20..n - 2] {
            *b = 0x55;
        }
        check("jpg", &corrupt, Validation::Cheap).unwrap();
        assert!(
            check("jpg", &corrupt, Validation::Full)
                .unwrap_err()
                .to_string()
                .contains("decode")
        );
        assert!(check("json", b"{\"a\":", Validation::None).is_ok());
    }
}
