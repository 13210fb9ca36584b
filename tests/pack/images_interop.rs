//! `pack` with image options against the real thing: img2dataset 1.47's `Resizer`
//! (OpenCV decode, albumentations geometry, OpenCV encode) on a corpus of real encoded
//! images in every awkward variant (`tests/interop/make_images.py`), for every resize
//! mode and output; the shards read back by webdataset (its PIL decoder too), streaming
//! and pyarrow.
//!
//! Needs `SHARDSMITH_IMAGES_PYTHON` (the interpreter of `tests/interop/setup_env.sh
//! images`, img2dataset's own pins) and `SHARDSMITH_PYTHON` (the readers' env); the
//! README's test command sets both. Without them the tests say so, and fail under CI.

use serde_json::Value;

use crate::interop;
use crate::util::*;

/// The images env's interpreter; `None` when unset and [`missing`] lets the test pass.
fn images_python() -> Option<std::path::PathBuf> {
    server_bin("SHARDSMITH_IMAGES_PYTHON", "images env")
}

/// Runs `tests/interop/SCRIPT ARGS` in the images env; its stdout, or a panic with its
/// output when it exits non-zero.
fn images_script(python: &std::path::Path, script: &str, args: &[&str]) -> String {
    let o = std::process::Command::new(python)
        .arg(interop::interop_dir().join(script))
        .args(args)
        .env("NO_ALBUMENTATIONS_UPDATE", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{script} {args:?}: exit {:?}\n{}\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// Makes the awkward corpus for `options`, packs it with them, and has img2dataset judge
/// every image: outcome, dimensions, metadata, PSNR (each value printed), PIL decoding.
/// Returns check_images.py's summary.
fn against_img2dataset(options: &[&str]) -> Option<Value> {
    let python = images_python()?;
    let t = Tree::new();
    images_script(
        &python,
        "make_images.py",
        &[&[&*t.s("c")][..], options].concat(),
    );
    let o = run(&[&["pack", &t.s("c/input"), &t.s("out"), "-q"][..], options].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (input, out, expected) = (t.s("c/input"), t.s("out"), t.s("c/expected.json"));
    let args = [&[&*input, &*out, "--expected", &*expected][..], options].concat();
    let python_out = std::process::Command::new(&python)
        .arg(interop::interop_dir().join("check_images.py"))
        .args(&args)
        .env("NO_ALBUMENTATIONS_UPDATE", "1")
        .output()
        .unwrap();
    let stderr = text(&python_out.stderr);
    // The per-image table (PSNR against img2dataset) is what the figures of
    // formats/image/README.md cite.
    eprintln!("pack {options:?}:\n{stderr}");
    assert!(
        python_out.status.success(),
        "img2dataset disagrees with pack {options:?}:\n{stderr}"
    );
    let summary: Value = serde_json::from_str(text(&python_out.stdout).trim()).unwrap();
    assert_eq!(summary["failures"], 0, "{summary}");
    // The corpus has 46 samples, 4 of them broken: a checker that compared nothing, or
    // a pack that left out what it should keep, fails here.
    assert_eq!(summary["input_samples"], 46, "{summary}");
    assert_eq!(
        summary["left_out"],
        46 - summary["kept"].as_u64().unwrap(),
        "{summary}"
    );
    assert!(summary["compared"].as_u64().unwrap() >= 35, "{summary}");
    assert_eq!(summary["pil_decoded"], summary["kept"], "{summary}");
    assert!(summary["min_psnr"].as_f64().unwrap() >= 35.0, "{summary}");
    Some(summary)
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn center_crop_jpeg_matches_img2dataset() {
    if let Some(s) = against_img2dataset(&["--resize-mode", "center_crop"]) {
        assert_eq!(s["kept"], 42, "{s}");
    }
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn keep_ratio_matches_img2dataset() {
    // The 10000 x 10 strip grows to 256000 x 256, wider than JPEG allows: left out, as
    // img2dataset's encoder fails on it too.
    if let Some(s) = against_img2dataset(&["--resize-mode", "keep_ratio"]) {
        assert_eq!(s["kept"], 41, "{s}");
    }
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn keep_ratio_largest_and_border_match_img2dataset() {
    against_img2dataset(&["--resize-mode", "keep_ratio_largest"]);
    against_img2dataset(&["--resize-mode", "border", "--image-size", "200"]);
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn no_resize_and_skip_reencode_match_img2dataset() {
    against_img2dataset(&["--resize-mode", "no"]);
    against_img2dataset(&["--resize-mode", "no", "--skip-reencode"]);
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn png_and_webp_outputs_match_img2dataset() {
    against_img2dataset(&["--image-format", "png", "--image-quality", "6"]);
    against_img2dataset(&["--resize-mode", "border", "--image-format", "webp"]);
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn tensors_match_img2dataset_pixels() {
    if let Some(s) = against_img2dataset(&["--image-as", "tensor", "--resize-mode", "center_crop"])
    {
        // No JPEG in between: the pixels themselves, compared with img2dataset's PNG.
        // Large JPEGs are decoded at a reduced DCT scale (OpenCV decodes in full and
        // area-averages): 44.4 dB for the 1411 x 1411 photo, 48 dB and up elsewhere.
        assert!(s["min_psnr"].as_f64().unwrap() >= 42.0, "{s}");
        assert!(s["psnr"]["photo-retina"].as_f64().unwrap() < 50.0, "{s}");
    }
    // Decoded in full, as OpenCV does: the same libjpeg-turbo, the same area average,
    // so baseline photos give img2dataset's pixels exactly (check_images.py caps PSNR at
    // 100 dB for identical images; the 1411 x 1411 photo differs in a few rounding ties).
    if let Some(s) = against_img2dataset(&[
        "--image-as",
        "tensor",
        "--resize-mode",
        "center_crop",
        "--full-decode",
    ]) {
        assert!(s["min_psnr"].as_f64().unwrap() >= 47.0, "{s}");
        for photo in [
            "photo-chelsea",
            "photo-coffee",
            "photo-hubble",
            "photo-rocket",
        ] {
            assert_eq!(s["psnr"][photo].as_f64(), Some(100.0), "{photo}: {s}");
        }
        assert!(s["psnr"]["photo-retina"].as_f64().unwrap() >= 90.0, "{s}");
    }
}

#[test]
#[ignore = "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)"]
fn limits_and_only_if_bigger_match_img2dataset() {
    against_img2dataset(&[
        "--resize-mode",
        "keep_ratio",
        "--resize-only-if-bigger",
        "--image-size",
        "300",
    ]);
    if let Some(s) = against_img2dataset(&[
        "--image-size",
        "100",
        "--min-image-size",
        "200",
        "--max-aspect-ratio",
        "3",
        "--max-image-area",
        "1000000",
    ]) {
        // Nine more left out: below 200 pixels, too long, or over a megapixel.
        assert!(s["left_out"].as_u64().unwrap() > 8, "{s}");
    }
}

/// MDS and Parquet outputs of the same corpus carry what the WebDataset output carries
/// (itself checked against img2dataset above), read by streaming and pyarrow: typed
/// int32/str size columns, image columns streaming decodes to PIL, and tensors as
/// `ndarray:uint8:H,W,3` (MDS) and fixed-size binary with dtype and shape (Parquet) when
/// every image has one shape, `.npy` values otherwise.
#[test]
#[ignore = "needs the images env and the python env: SHARDSMITH_IMAGES_PYTHON, SHARDSMITH_PYTHON (tests/setup.sh)"]
fn mds_and_parquet_carry_the_same_images_and_typed_sizes() {
    let Some(python) = images_python() else {
        return;
    };
    if interop::python().is_none() {
        return;
    }
    let t = Tree::new();
    images_script(&python, "make_images.py", &[&*t.s("c")]);
    // MDS has no missing values: the image fields only (json and txt are not in every
    // sample).
    let fields = "jpg,jpeg,png,gif,webp,bmp,tif";
    for (name, options) in [
        ("jpeg", &["--resize-mode", "center_crop"][..]),
        (
            "png",
            &["--image-format", "png", "--image-quality", "3"][..],
        ),
        ("tensor", &["--image-as", "tensor"][..]),
        (
            "tensors-of-many-shapes",
            &["--image-as", "tensor", "--resize-mode", "keep_ratio"][..],
        ),
    ] {
        for format in ["webdataset", "mds", "parquet"] {
            let out = t.s(&format!("{name}-{format}"));
            let o = run(&[
                &[
                    "pack",
                    &t.s("c/input"),
                    &out,
                    "--format",
                    format,
                    "--fields",
                    fields,
                    "-q",
                ][..],
                options,
            ]
            .concat());
            assert_eq!(
                o.status.code(),
                Some(0),
                "{name} {format}: {}",
                text(&o.stderr)
            );
        }
        let mds_index: Value = serde_json::from_slice(
            &std::fs::read(t.join(&format!("{name}-mds/index.json"))).unwrap(),
        )
        .unwrap();
        let shard = &mds_index["shards"][0];
        let names: Vec<&str> = shard["column_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let encodings = &shard["column_encodings"];
        let encoding = |col: &str| {
            let i = names.iter().position(|n| *n == col).unwrap();
            encodings[i].as_str().unwrap().to_string()
        };
        match name {
            "jpeg" => assert_eq!(encoding("jpg"), "jpeg"),
            "png" => assert_eq!(encoding("png"), "png"),
            "tensor" => assert_eq!(encoding("npy"), "ndarray:uint8:256,256,3"),
            _ => assert_eq!(encoding("npy"), "ndarray:uint8"),
        }
        assert_eq!(encoding("width"), "int32");
        assert_eq!(encoding("source_format"), "str");
        let columns = &manifest(&t.join(&format!("{name}-parquet")))["options"]["columns"];
        assert_eq!(columns["width"], "Int32", "{columns}");
        match name {
            "tensor" => assert_eq!(columns["npy"], "FixedSizeBinary(196608)"),
            "tensors-of-many-shapes" => assert_eq!(columns["npy"], "Binary"),
            _ => {}
        }
        interop::check(
            "check_images_columns.py",
            &[
                &t.s(&format!("{name}-webdataset")),
                "--mds",
                &t.s(&format!("{name}-mds")),
                "--parquet",
                &t.s(&format!("{name}-parquet")),
            ],
        );
    }
}
