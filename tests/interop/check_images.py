#!/usr/bin/env python3
"""Checks `shardsmith pack --image-size ...` WebDataset output against img2dataset 1.47.0's
Resizer, image by image.

usage: check_images.py INPUT_DIR WDS_DIR [--expected FILE] [--min-psnr 35]
         [--image-size 256] [--resize-mode border] [--image-format jpg] [--image-quality 95]
         [--image-as tensor] [--resize-only-if-bigger] [--skip-reencode] [--full-decode]
         [--min-image-size N] [--max-image-area N] [--max-aspect-ratio X]
Runs in the images venv (tests/interop/setup_env.sh images). The options must be those
given to `shardsmith pack`; any not given are taken from --expected's "options" (written by
make_images.py), else img2dataset's defaults.

For every input sample with an image field (jpg jpeg png webp gif bmp tiff tif):
  1. the shards, read with webdataset.WebDataset(...).decode() (images opened with Pillow
     as stored, not converted as decode("pil") would), hold it or
     manifest.json lists it under "skipped"; with --expected, as expected.json says (a
     left-out reason must contain one of the "|"-separated words of reason_contains);
  2. a kept sample has the image under the output format's field (jpg, png, webp; npy with
     --image-as tensor: uint8 HWC RGB), a json with width, height, original_width,
     original_height and source_format (the input's own keys kept), its other fields
     unchanged; the decoded image is width x height;
  3. img2dataset's Resizer, given the same bytes (upright first when EXIF orientation is not
     1: Pillow's exif_transpose, saved as PNG; 16-bit pixels scaled to 8 bits first, since
     OpenCV saturates them when encoding), gives the same width, height and original size;
  4. webdataset's own decode("pil") gives the same pixels (RGB) for every sample;
  5. PSNR of our pixels vs img2dataset's decoded output, both as 8-bit RGB (img2dataset's
     BGR/grey converted; alpha composited on white as img2dataset does): every value is
     printed (stderr); the minimum over "photo" images must reach --min-psnr.
Prints a JSON summary on stdout; exits 1 on any failure, with the reasons on stderr.
"""
import argparse
import io
import json
import math
import os
import sys

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # albumentations asks PyPI at import otherwise

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import webdataset as wds  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402
from img2dataset.resizer import Resizer  # noqa: E402

from common import key_field, load_manifest, read_bytes  # noqa: E402

IMAGE_FIELDS = ("jpg", "jpeg", "png", "webp", "gif", "bmp", "tiff", "tif")
IMAGE_KEYS = ("width", "height", "original_width", "original_height", "source_format")
SOURCE_FORMAT = {"JPEG": "jpeg", "MPO": "jpeg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp",
                 "TIFF": "tiff"}
DEFAULTS = {"image_size": 256, "resize_mode": "border", "image_format": "jpg", "image_quality": 95,
            "image_as": None, "resize_only_if_bigger": False, "skip_reencode": False, "min_image_size": 0,
            "max_image_area": None, "max_aspect_ratio": None}
PSNR_CAP = 100.0  # identical images

failures, notes = [], []


def fail(message):
    failures.append(message)
    print("FAIL:", message, file=sys.stderr)


def note(message):
    notes.append(message)
    print("note:", message, file=sys.stderr)


def input_samples(root):
    groups = {}
    for d, _, files in os.walk(root):
        for name in files:
            key, field = key_field(os.path.relpath(os.path.join(d, name), root).replace(os.sep, "/"))
            groups.setdefault(key, {})[field] = read_bytes(os.path.join(d, name))
    return groups


def output_samples(out_dir):
    manifest = load_manifest(out_dir)
    urls = [os.path.join(out_dir, e["path"]) for e in manifest["files"] if ".tar" in e["path"]]
    samples = {}
    if urls:
        # decode("pil") would convert to RGB: this keeps the mode (alpha) and format.
        for s in wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode(open_image):
            if s["__key__"] in samples:
                fail(f"key {s['__key__']!r} appears twice in the shards")
            samples[s["__key__"]] = {k: v for k, v in s.items() if not k.startswith("__")}
    return samples, manifest.get("skipped", [])


def pil_pass(out_dir, outputs, out_field):
    """Reads the shards again as a training script does, with webdataset's own PIL decoder
    (decode("pil"): RGB images; .npy fields as arrays), and checks that every sample decodes
    to the same pixels as the first pass."""
    manifest = load_manifest(out_dir)
    urls = [os.path.join(out_dir, e["path"]) for e in manifest["files"] if ".tar" in e["path"]]
    seen = 0
    for s in wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode("pil"):
        key, value = s["__key__"], s.get(out_field)
        first = outputs.get(key, {}).get(out_field)
        if value is None or first is None:
            fail(f"{key}: decode('pil') gives no {out_field} field")
            continue
        seen += 1
        if out_field == "npy":
            ok = isinstance(value, np.ndarray) and np.array_equal(value, first)
        else:
            ok = isinstance(value, Image.Image) and value.mode == "RGB" and np.array_equal(
                np.asarray(value), np.asarray(first.convert("RGB")))
        if not ok:
            fail(f"{key}: decode('pil') gives {type(value).__name__} "
                 f"{getattr(value, 'mode', getattr(value, 'shape', ''))}, not the stored pixels")
    return seen


def open_image(key, data):
    """A webdataset decoder: a Pillow image as it is stored, for the output image fields."""
    if key.rpartition(".")[2].lower() in ("jpg", "png", "webp"):
        img = Image.open(io.BytesIO(data))
        img.load()
        return img
    return None


def reference_input(data):
    """What img2dataset is given: the input, upright and 8-bit; and how it was changed."""
    how = []
    try:
        img = Image.open(io.BytesIO(data))
        orientation = img.getexif().get(0x0112, 1)
    except Exception:  # not an image Pillow knows: img2dataset gets it as it is
        return data, ""
    if orientation not in (None, 1):
        img = ImageOps.exif_transpose(img)
        if img.mode not in ("1", "L", "LA", "I;16", "P", "RGB", "RGBA"):
            img = img.convert("RGB")
        buf = io.BytesIO()
        img.save(buf, "PNG")
        data = buf.getvalue()
        how.append(f"exif_transpose({orientation})")
    try:
        arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    except cv2.error:
        arr = None
    if arr is not None and arr.dtype == np.uint16:
        arr = ((arr.astype(np.uint32) + 128) // 257).astype(np.uint8)
        data = cv2.imencode(".png", arr)[1].tobytes()
        how.append("16->8 bit")
    return data, "+".join(how)


def on_white(rgb, alpha):
    """img2dataset's alpha matting: alpha/255*rgb + 255 - alpha, rounded."""
    a = alpha[..., np.newaxis].astype(np.float64)
    return np.rint((a / 255 * rgb + 255 - a).clip(0, 255)).astype(np.uint8)


def cv_rgb(arr):
    """8-bit RGB of an OpenCV (BGR, BGRA or grey) decode."""
    if arr.ndim == 2:
        return np.repeat(arr[..., None], 3, axis=2)
    if arr.shape[2] == 4:
        return on_white(arr[..., 2::-1], arr[..., 3])
    return np.ascontiguousarray(arr[..., ::-1])


def pil_rgb(img):
    if img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info:
        rgba = np.asarray(img.convert("RGBA"))
        return on_white(rgba[..., :3], rgba[..., 3])
    return np.asarray(img.convert("RGB"))


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return PSNR_CAP if mse == 0 else min(PSNR_CAP, 10 * math.log10(255.0 ** 2 / mse))


def options(args, expected):
    given = expected.get("options", {})
    opts = {}
    for name, default in DEFAULTS.items():
        cli = getattr(args, name)
        if cli is not None and name in given and given[name] != cli:
            sys.exit(f"--{name.replace('_', '-')} {cli} differs from {given[name]} in the expected file")
        opts[name] = cli if cli is not None else given.get(name, default)
    return opts


def make_resizer(o):
    fmt = "png" if o["image_as"] == "tensor" else o["image_format"]  # png: the pixels themselves
    quality = min(o["image_quality"], 9) if fmt == "png" else o["image_quality"]
    inf = float("inf")
    return Resizer(image_size=o["image_size"], resize_mode=o["resize_mode"],
                   resize_only_if_bigger=o["resize_only_if_bigger"], encode_format=fmt, encode_quality=quality,
                   skip_reencode=o["skip_reencode"], min_image_size=o["min_image_size"],
                   max_image_area=inf if o["max_image_area"] is None else o["max_image_area"],
                   max_aspect_ratio=inf if o["max_aspect_ratio"] is None else o["max_aspect_ratio"])


def check_fields(key, fields, got, out_field):
    """The output sample's fields: the image renamed, json merged, the rest unchanged."""
    want = {f for f in fields if f not in IMAGE_FIELDS} | {out_field, "json"}
    if set(got) != want:
        fail(f"{key}: fields {sorted(got)}, expected {sorted(want)}")
    meta = got.get("json")
    if not isinstance(meta, dict):
        fail(f"{key}: json is {type(meta).__name__}, not an object")
        return {}
    missing = [k for k in IMAGE_KEYS if k not in meta]
    if missing:
        fail(f"{key}: json lacks {missing}")
    if "json" in fields:
        for k, v in json.loads(fields["json"]).items():
            if k not in IMAGE_KEYS and meta.get(k) != v:
                fail(f"{key}: json key {k!r} is {meta.get(k)!r}, input had {v!r}")
    for f, data in fields.items():
        if f in IMAGE_FIELDS or f == "json" or f not in got:
            continue
        value = got[f]
        same = value == data.decode() if isinstance(value, str) else value == data if isinstance(value, bytes) else True
        if not same:
            fail(f"{key}: field {f} changed")
    return meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("wds")
    ap.add_argument("--expected")
    ap.add_argument("--min-psnr", type=float, default=35.0)
    ap.add_argument("--image-size", type=int)
    ap.add_argument("--resize-mode", choices=["no", "keep_ratio", "keep_ratio_largest", "center_crop", "border"])
    ap.add_argument("--image-format", choices=["jpg", "png", "webp"])
    ap.add_argument("--image-quality", type=int)
    ap.add_argument("--image-as", choices=["tensor"])
    ap.add_argument("--resize-only-if-bigger", action="store_const", const=True)
    ap.add_argument("--skip-reencode", action="store_const", const=True)
    # How pack decodes JPEGs (img2dataset always decodes in full): only the PSNR moves.
    ap.add_argument("--full-decode", action="store_true")
    ap.add_argument("--min-image-size", type=int)
    ap.add_argument("--max-image-area", type=int)
    ap.add_argument("--max-aspect-ratio", type=float)
    args = ap.parse_args()
    expected = json.load(open(args.expected)) if args.expected else {}
    opts = options(args, expected)
    want = expected.get("samples", {})
    resizer = make_resizer(opts)
    out_field = "npy" if opts["image_as"] == "tensor" else opts["image_format"]
    pil_format = {"jpg": "JPEG", "png": "PNG", "webp": "WEBP"}.get(out_field)

    inputs = input_samples(args.input)
    outputs, skipped = output_samples(args.wds)
    reasons = {}
    for s in skipped:
        reasons.setdefault(key_field(s["path"])[0], []).append(f"{s['path']}: {s['reason']}")
    for key in sorted(set(want) - set(inputs)):
        fail(f"{key}: in the expected file but not in {args.input}")
    for key in sorted(set(outputs) - set(inputs)):
        fail(f"{key}: in the shards but not in the input")
    rows, left_out = [], 0
    for key in sorted(inputs, key=lambda k: k.encode()):
        fields = inputs[key]
        image_fields = [f for f in fields if f in IMAGE_FIELDS]
        got = outputs.get(key)
        if not image_fields:
            if got is None and key not in reasons:
                fail(f"{key}: a sample without an image is missing and not listed as skipped")
            continue
        if len(image_fields) > 1:
            note(f"{key}: several image fields {image_fields}; checking {image_fields[0]}")
        data = fields[image_fields[0]]
        exp = want.get(key)
        ref_bytes, how = reference_input(data)
        ref_img, rw, rh, row, roh, err = resizer(io.BytesIO(ref_bytes))
        should_keep = exp["kept"] if exp else err is None
        if got is None:
            left_out += 1
            why = "; ".join(reasons.get(key, []))
            if should_keep:
                fail(f"{key}: left out ({why or 'not listed as skipped'}), but it should be kept"
                     + ("" if err else f" (img2dataset gives {rw}x{rh})"))
            elif not why:
                fail(f"{key}: not in the shards and not listed under skipped in manifest.json")
            elif exp and exp["reason_contains"]:
                words = exp["reason_contains"].split("|")
                if not any(w.lower() in why.lower() for w in words):
                    fail(f"{key}: left out for {why!r}, a reason containing one of {words} was expected")
            if exp and not exp["kept"] and err is None:
                note(f"{key}: left out as expected; img2dataset keeps it ({rw}x{rh})")
            continue
        if not should_keep:
            fail(f"{key}: kept, but it should be left out"
                 + (f" ({exp['reason_contains']})" if exp else f" (img2dataset: {err.strip()})"))
            continue
        if key in reasons:
            fail(f"{key}: kept, but also listed as skipped: {reasons[key]}")
        meta = check_fields(key, fields, got, out_field)
        img = got.get(out_field)
        if img is None:
            continue
        if out_field == "npy":
            if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3):
                fail(f"{key}: npy is not a uint8 HxWx3 array: {getattr(img, 'dtype', type(img))} "
                     f"{getattr(img, 'shape', '')}")
                continue
            ours = img
        else:
            if img.format != pil_format:
                fail(f"{key}: {out_field} field holds {img.format}")
            ours = pil_rgb(img)
        h, w = ours.shape[:2]
        if (meta.get("width"), meta.get("height")) != (w, h):
            fail(f"{key}: image is {w}x{h}, json says {meta.get('width')}x{meta.get('height')}")
        try:
            src = SOURCE_FORMAT.get(Image.open(io.BytesIO(data)).format)
        except Exception:
            src = None
        if meta.get("source_format") != src:
            fail(f"{key}: source_format {meta.get('source_format')!r}, the input is {src!r}")
        if exp:
            for k in ("width", "height", "original_width", "original_height", "source_format"):
                if meta.get(k) != exp[k]:
                    fail(f"{key}: {k} {meta.get(k)!r}, expected {exp[k]!r} ({exp['variant']})")
        value = None
        if err is not None:
            note(f"{key}: img2dataset fails ({err.strip()[:100]}); not compared")
        else:
            if (rw, rh) != (w, h):
                fail(f"{key}: {w}x{h}, img2dataset gives {rw}x{rh} (from {row}x{roh})")
            if (row, roh) != (meta.get("original_width"), meta.get("original_height")):
                fail(f"{key}: original {meta.get('original_width')}x{meta.get('original_height')}, "
                     f"img2dataset sees {row}x{roh}")
            theirs = cv_rgb(cv2.imdecode(np.frombuffer(ref_img, np.uint8), cv2.IMREAD_UNCHANGED))
            if theirs.shape == ours.shape:
                value = psnr(ours, theirs)
        photo = exp.get("photo", True) if exp else True
        rows.append((key, how, meta.get("source_format"), meta.get("original_width"), meta.get("original_height"),
                     w, h, value, photo))

    pil_read = pil_pass(args.wds, outputs, out_field)
    if pil_read != sum(1 for s in outputs.values() if out_field in s):
        fail(f"decode('pil') read {pil_read} images, the first pass {len(outputs)} samples")
    print(f"{'key':<24}{'source':<7}{'original':>12}{'output':>12}{'PSNR dB':>9}  reference", file=sys.stderr)
    for key, how, src, ow, oh, w, h, value, photo in rows:
        shown = "-" if value is None else f"{value:.2f}"
        print(f"{key:<24}{src or '?':<7}{f'{ow}x{oh}':>12}{f'{w}x{h}':>12}{shown:>9}  "
              f"{how or 'as is'}{'' if photo else ', not held to the threshold'}", file=sys.stderr)
    held = [(v, k) for k, _, _, _, _, _, _, v, photo in rows if v is not None and photo]
    compared = [v for *_, v, _ in rows if v is not None]
    low = sorted((v, k) for v, k in held if v < args.min_psnr)
    if low:
        fail(f"PSNR below {args.min_psnr} dB: " + ", ".join(f"{k} {v:.2f}" for v, k in low))
    summary = {
        "input_samples": len(inputs), "kept": len(outputs), "left_out": left_out, "compared": len(compared),
        "min_psnr": round(min(held)[0], 2) if held else None, "min_psnr_key": min(held)[1] if held else None,
        "mean_psnr": round(sum(v for v, _ in held) / len(held), 2) if held else None,
        "min_psnr_all": round(min(compared), 2) if compared else None, "threshold": args.min_psnr,
        "pil_decoded": pil_read, "failures": len(failures), "notes": len(notes), "options": opts,
        "psnr": {k: round(v, 2) for k, _, _, _, _, _, _, v, _ in rows if v is not None},
    }
    print(json.dumps(summary))
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
