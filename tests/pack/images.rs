//! `pack` with image options: every awkward kind of image gets its outcome, the bytes do
//! not depend on `--jobs`, a killed run resumes to the same bytes, shards stay within
//! their size, and metadata lands where each format's readers look.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::path::Path;

use image::{DynamicImage, ImageEncoder, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use serde_json::Value;

use crate::util::*;

fn png(image: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

/// A smooth picture (JPEG encoders and resizers behave as on photos).
fn picture(w: u32, h: u32, seed: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        Rgb([
            ((x * 255) / w) as u8,
            ((y * 255) / h) as u8,
            ((x + y + seed * 37) % 256) as u8,
        ])
    })
}

fn jpeg(image: &RgbImage, orientation: Option<u16>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 90);
    if let Some(o) = orientation {
        let mut exif = b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01".to_vec();
        exif.extend_from_slice(&o.to_be_bytes());
        exif.extend_from_slice(&[0; 6]);
        encoder.add_exif_metadata(&exif).unwrap();
    }
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

/// A 1 x 1 PNG whose header says `w` x `h`.
fn bomb(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = png(&DynamicImage::ImageRgb8(RgbImage::new(1, 1)));
    bytes[16..20].copy_from_slice(&w.to_be_bytes());
    bytes[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// A 4 x 4 paletted PNG, valid CRCs and all, whose PLTE chunk is 49 bytes (16 entries
/// and one byte) with a tRNS chunk: png 0.18.1 panics expanding it to RGBA (found by
/// the `image` fuzz target).
fn partial_palette_png() -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], body: &[u8]) {
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    // Four rows: filter byte 0, then four palette indices.
    let rows: Vec<u8> = (0..4u8).flat_map(|r| [0, r, r + 1, r + 2, 15]).collect();
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &rows {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    // zlib, one stored deflate block, Adler-32.
    let mut idat = vec![
        0x78,
        0x01,
        0x01,
        rows.len() as u8,
        0,
        !(rows.len() as u8),
        0xff,
    ];
    idat.extend_from_slice(&rows);
    idat.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &[0, 0, 0, 4, 0, 0, 0, 4, 8, 3, 0, 0, 0]);
    chunk(
        &mut out,
        b"PLTE",
        &(0..49u8).map(|i| i * 5).collect::<Vec<_>>(),
    );
    chunk(&mut out, b"tRNS", &[0x40]);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

fn gif() -> Vec<u8> {
    use image::codecs::gif::GifEncoder;
    let mut bytes = Vec::new();
    let mut encoder = GifEncoder::new(&mut bytes);
    for colour in [[255, 0, 0, 255], [0, 0, 255, 255]] {
        let frame = image::Frame::from_parts(
            RgbaImage::from_pixel(16, 8, Rgba(colour)),
            0,
            0,
            image::Delay::from_numer_denom_ms(100, 1),
        );
        encoder.encode_frame(frame).unwrap();
    }
    drop(encoder);
    bytes
}

/// Every awkward input, by key: what goes in.
fn awkward() -> Tree {
    let t = Tree::new();
    let photo = jpeg(&picture(300, 200, 1), None);
    t.file("photo.jpg", &photo);
    t.file("photo.json", br#"{"caption": "a photo", "n": 1.50}"#);
    t.file("rotated.jpg", jpeg(&picture(40, 20, 2), Some(6)));
    t.file(
        "alpha.png",
        png(&DynamicImage::ImageRgba8(RgbaImage::from_pixel(
            30,
            30,
            Rgba([0, 0, 0, 0]),
        ))),
    );
    t.file(
        "grey16.png",
        png(&DynamicImage::ImageLuma16(image::ImageBuffer::from_pixel(
            20,
            20,
            image::Luma([40_000u16]),
        ))),
    );
    t.file("anim.gif", gif());
    t.file(
        "tiny.png",
        png(&DynamicImage::ImageRgb8(RgbImage::new(1, 1))),
    );
    t.file(
        "long.png",
        png(&DynamicImage::ImageRgb8(picture(10_000, 10, 3))),
    );
    t.file("bomb.png", bomb(100_000, 100_000));
    t.file("trunc.jpg", &photo[..photo.len() / 2]);
    t.file("trunc.txt", "the caption of a truncated image");
    t.file("zero.jpg", vec![0u8; photo.len()]);
    t.file(
        "wrong.jpg",
        png(&DynamicImage::ImageRgb8(picture(50, 50, 4))),
    );
    t.file("text.jpg", "<html>not found</html>");
    t.file("palette.png", partial_palette_png());
    let mut webp = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut webp)
        .write_image(
            picture(64, 32, 5).as_raw(),
            64,
            32,
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    t.file("lossless.webp", webp);
    t.file("notes.txt", "a sample without images passes through");
    t
}

/// The samples of a WebDataset output: key -> field -> bytes.
fn read_wds(dir: &Path) -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    let mut samples: BTreeMap<String, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    let mut shards: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tar"))
        .collect();
    shards.sort();
    for shard in shards {
        let mut archive = tar::Archive::new(std::fs::File::open(shard).unwrap());
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().to_string_lossy().into_owned();
            let (key, field) = name.split_once('.').unwrap();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            samples
                .entry(key.to_string())
                .or_default()
                .insert(field.to_string(), bytes);
        }
    }
    samples
}

const OPTS: [&str; 4] = ["--image-size", "64", "--resize-mode", "center_crop"];

#[test]
fn every_awkward_image_gets_its_outcome() {
    let input = awkward();
    let out = Tree::new();
    let o = run(&[
        &["pack", &input.s(""), &out.s("ds"), "--quiet"][..],
        &OPTS[..],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("1 image(s) are not the format their name says")
            && stderr.contains("`wrong.jpg` is a PNG"),
        "{stderr}"
    );
    let samples = read_wds(&out.join("ds"));
    let json = |key: &str| -> Value { serde_json::from_slice(&samples[key]["json"]).unwrap() };
    // Kept, with img2dataset's metadata and a 64 x 64 JPEG.
    for (key, original, format) in [
        ("photo", (300, 200), "jpeg"),
        ("rotated", (20, 40), "jpeg"),
        ("alpha", (30, 30), "png"),
        ("grey16", (20, 20), "png"),
        ("anim", (16, 8), "gif"),
        ("tiny", (1, 1), "png"),
        ("long", (10_000, 10), "png"),
        ("wrong", (50, 50), "png"),
        ("lossless", (64, 32), "webp"),
    ] {
        let meta = json(key);
        assert_eq!(
            (
                &meta["width"],
                &meta["height"],
                &meta["original_width"],
                &meta["original_height"],
                &meta["source_format"]
            ),
            (
                &Value::from(64),
                &Value::from(64),
                &Value::from(original.0),
                &Value::from(original.1),
                &Value::from(format)
            ),
            "{key}: {meta}"
        );
        let decoded = image::load_from_memory_with_format(&samples[key]["jpg"], ImageFormat::Jpeg)
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!((decoded.width(), decoded.height()), (64, 64), "{key}");
        assert_eq!(samples[key].len(), 2, "{key}: {:?}", samples[key].keys());
    }
    // The caption's own text is kept as written, the sizes appended.
    assert_eq!(
        String::from_utf8(samples["photo"]["json"].clone()).unwrap(),
        r#"{"caption": "a photo", "n": 1.50, "width": 64, "height": 64, "original_width": 300, "original_height": 200, "source_format": "jpeg"}"#
    );
    // Transparent black is white once flattened; the GIF is its first (red) frame.
    let px = |key: &str| {
        image::load_from_memory(&samples[key]["jpg"])
            .unwrap()
            .to_rgb8()
            .get_pixel(32, 32)
            .0
    };
    assert!(px("alpha").iter().all(|&c| c >= 250), "{:?}", px("alpha"));
    let red = px("anim");
    assert!(red[0] > 240 && red[1] < 15 && red[2] < 15, "{red:?}");
    // Untouched: a sample without images.
    assert_eq!(
        samples["notes"]["txt"],
        b"a sample without images passes through"
    );
    // Left out, each with its reason, and nothing else.
    let manifest = manifest(&out.join("ds"));
    let skipped: BTreeMap<String, String> = manifest["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        (
            "bomb.png",
            "declares 100000 x 100000 pixels (10000000000), more than --max-image-area 178956970: refused before decoding",
        ),
        (
            "trunc.jpg",
            "JPEG has no end-of-image marker: the file is truncated",
        ),
        (
            "trunc.txt",
            "left out with `trunc.jpg`, another file of sample `trunc`",
        ),
        ("zero.jpg", "is not an image"),
        ("text.jpg", "is not an image"),
        (
            "palette.png",
            "png does not decode: PLTE chunk at byte 33 holds 49 bytes, not 1 to 256 RGB entries",
        ),
    ];
    assert_eq!(skipped.len(), want.len(), "{skipped:#?}");
    for (path, reason) in want {
        assert!(skipped[path].contains(reason), "{path}: {}", skipped[path]);
    }
    assert_eq!(samples.len(), 10);
}

#[test]
fn validate_full_reports_an_image_the_decoder_would_crash_on() {
    // Without image options, `--validate full` decodes JPEGs and PNGs to check them: the
    // same guarded decoder, so the sample is left out with the reason, nothing else.
    let t = Tree::new();
    t.file("in/bad.png", partial_palette_png());
    t.file("in/bad.txt", "its caption");
    t.file(
        "in/good.png",
        png(&DynamicImage::ImageRgb8(picture(8, 8, 1))),
    );
    let o = run(&["pack", &t.s("in"), &t.s("ds"), "--validate", "full", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let skipped = manifest(&t.join("ds"))["skipped"].clone();
    assert_eq!(skipped.as_array().unwrap().len(), 2, "{skipped}");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("PLTE chunk at byte 33 holds 49 bytes"),
        "{skipped}"
    );
    assert_eq!(read_wds(&t.join("ds")).len(), 1);
}

#[test]
fn strict_stops_at_the_first_bad_image() {
    let input = awkward();
    let out = Tree::new();
    let o = run(&[
        &["pack", &input.s(""), &out.s("ds"), "--strict"][..],
        &OPTS[..],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("bomb.png") && stderr.contains("decompression bomb"),
        "{stderr}"
    );
    assert!(!out.join("ds/manifest.json").exists());
}

/// Enough photos for several shards.
fn photos(n: u32) -> Tree {
    let t = Tree::new();
    for i in 0..n {
        let image = picture(120 + (i * 7) % 90, 90 + (i * 13) % 70, i);
        if i % 3 == 0 {
            t.file(&format!("{i:04}.png"), png(&DynamicImage::ImageRgb8(image)));
        } else {
            t.file(&format!("{i:04}.jpg"), jpeg(&image, None));
        }
        t.file(&format!("{i:04}.txt"), format!("caption {i}"));
    }
    t
}

#[test]
fn same_bytes_for_any_jobs_and_after_a_kill() {
    let input = photos(120);
    let out = Tree::new();
    let (input_dir, out_dir) = (input.s(""), out.s(""));
    let args = |dir: &'static str, jobs: &'static str| -> Vec<String> {
        [
            "--jobs",
            jobs,
            "pack",
            &input_dir,
            &format!("{out_dir}/{dir}"),
            "--quiet",
            "--shard-size",
            "40KiB",
            "--image-size",
            "96",
            "--resize-mode",
            "keep_ratio",
        ]
        .map(String::from)
        .to_vec()
    };
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let one = args("one", "1");
    assert!(run(&strs(&one)).status.success());
    let two = args("two", "2");
    assert!(run(&strs(&two)).status.success());
    let a = snapshot(&out.join("one"));
    assert!(a.len() > 6, "{:?}", a.keys());
    assert_eq!(a, snapshot(&out.join("two")));
    // Every shard within the size.
    for (name, bytes) in &a {
        if name.ends_with(".tar") {
            assert!(bytes.len() <= 40 * 1024, "{name}: {}", bytes.len());
        }
    }
    // Killed once shards exist, then run again with the same arguments.
    let killed = args("killed", "2");
    let was_killed = run_and_kill(&strs(&killed), &out.join("killed"), ".tar", 2);
    let o = run(&strs(&killed));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(was_killed, "the run ended before it could be killed");
    assert_eq!(a, snapshot(&out.join("killed")));
}

#[test]
fn mds_gets_typed_columns_and_fixed_shape_tensors() {
    let input = photos(6);
    let out = Tree::new();
    let o = run(&[
        "pack",
        &input.s(""),
        &out.s("img"),
        "--format",
        "mds",
        "--quiet",
        "--image-size",
        "32",
        "--resize-mode",
        "center_crop",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let index: Value =
        serde_json::from_slice(&std::fs::read(out.join("img/index.json")).unwrap()).unwrap();
    let shard = &index["shards"][0];
    let columns: BTreeMap<&str, &str> = shard["column_names"]
        .as_array()
        .unwrap()
        .iter()
        .zip(shard["column_encodings"].as_array().unwrap())
        .map(|(n, e)| (n.as_str().unwrap(), e.as_str().unwrap()))
        .collect();
    assert_eq!(
        columns,
        BTreeMap::from([
            ("height", "int32"),
            ("jpg", "jpeg"),
            ("key", "str"),
            ("original_height", "int32"),
            ("original_width", "int32"),
            ("source_format", "str"),
            ("txt", "str"),
            ("width", "int32"),
        ])
    );
    let o = run(&[
        "pack",
        &input.s(""),
        &out.s("t"),
        "--format",
        "mds",
        "--quiet",
        "--image-size",
        "32",
        "--resize-mode",
        "center_crop",
        "--image-as",
        "tensor",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let index = std::fs::read_to_string(out.join("t/index.json")).unwrap();
    assert!(index.contains("\"ndarray:uint8:32,32,3\""), "{index}");
}

#[test]
fn image_options_are_checked_before_any_io() {
    let out = Tree::new();
    for (args, want) in [
        (vec!["--image-size", "0"], "--image-size"),
        (
            vec!["--image-format", "png", "--image-quality", "95"],
            "0 to 9",
        ),
        (vec!["--max-aspect-ratio", "0.5"], "at least 1"),
        (
            vec![
                "--image-size",
                "64",
                "--task-index",
                "0",
                "--task-count",
                "2",
            ],
            "cannot be split into tasks",
        ),
    ] {
        let o = run(&[&["pack", "/nonexistent-input", &out.s("x")][..], &args[..]].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains(want),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}
