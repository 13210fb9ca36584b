#!/usr/bin/env python3
"""Writes a corpus of real encoded images in every awkward variant, for checking
`shardsmith pack --image-size ...` against img2dataset (tests/interop/check_images.py).

usage: make_images.py OUT_DIR [--image-size 256] [--resize-mode border]
                      [--image-format jpg] [--image-quality 95] [--image-as tensor] [--resize-only-if-bigger]
                      [--skip-reencode] [--full-decode]
                      [--min-image-size N] [--max-image-area N] [--max-aspect-ratio X]
Runs in the images venv (tests/interop/setup_env.sh images). Writes:
  OUT_DIR/input/KEY.EXT ...   the corpus (pack this directory); ~3 MB
  OUT_DIR/expected.json       {"options": {...the options above...},
                               "samples": {KEY: {"kept": true, "width", "height",
                                 "original_width", "original_height", "source_format",
                                 "photo": bool, "variant": "..."} or
                                {"kept": false, "reason_contains": "a|b", "variant": ...}}}
Dimensions follow img2dataset 1.47.0 (albumentations 1.4.24) for the given options,
after EXIF orientation (original_* are the upright dimensions). "photo": false marks
images whose PSNR is not held to the threshold (1x1, a 10000x10 strip, bilevel,
graphics). reason_contains lists alternatives (any, case-insensitive); "" = any reason.
Content comes from scikit-image's bundled sample photos; everything is deterministic.
"""
import argparse
import io
import json
import os
import struct
import zlib

import numpy as np
import skimage.data
from PIL import Image

SOURCES = {n: getattr(skimage.data, n) for n in ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field",
                                                  "retina", "immunohistochemistry", "camera", "moon", "page", "logo")}
SOURCE_FORMAT = {"JPEG": "jpeg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp", "TIFF": "tiff"}
ENCODE_LIMIT = {"jpg": 65535, "webp": 16383}  # largest side the output encoder takes


def photo(name, w, h):
    """A w x h crop-and-resize of a bundled sample image (uint8, RGB or grey)."""
    img = Image.fromarray(SOURCES[name]())
    sw, sh = img.size
    if sw * h > sh * w:  # too wide: crop the width
        cw = sh * w // h
        img = img.crop(((sw - cw) // 2, 0, (sw - cw) // 2 + cw, sh))
    else:
        ch = sw * h // w
        img = img.crop((0, (sh - ch) // 2, sw, (sh - ch) // 2 + ch))
    return np.asarray(img.resize((w, h), Image.LANCZOS))


def encode(arr_or_img, fmt, **kw):
    img = arr_or_img if isinstance(arr_or_img, Image.Image) else Image.fromarray(arr_or_img)
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(w=100000, h=100000):
    """A valid PNG header declaring w x h RGB pixels, with only two rows of data."""
    rows = zlib.compress(bytes(1 + 3 * w) * 2, 9)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + png_chunk(b"IDAT", rows) + png_chunk(b"IEND", b""))


# Stored = upright transformed by the inverse of what the EXIF orientation asks, so
# applying the orientation gives the upright picture back.
STORE_FOR_ORIENTATION = {1: None, 2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
                         4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
                         6: Image.Transpose.ROTATE_90, 7: Image.Transpose.TRANSVERSE, 8: Image.Transpose.ROTATE_270}


def variants(size):
    """(key, {ext: bytes}, upright (w, h) or None when left out, photo, variant, reason)."""
    out = []

    def add(key, files, dims, variant, photo_=True, reason=None):
        out.append((key, files, dims, photo_, variant, reason))

    for name, (w, h) in [("astronaut", (512, 512)), ("coffee", (600, 400)), ("chelsea", (451, 300)),
                         ("rocket", (640, 427)), ("hubble_deep_field", (1000, 872)), ("retina", (1411, 1411))]:
        add(f"photo-{name.split('_')[0]}", {"jpg": encode(photo(name, w, h), "JPEG", quality=90)}, (w, h),
            f"baseline JPEG q90, 4:2:0, {w}x{h}")
    add("jpeg-444", {"jpeg": encode(photo("immunohistochemistry", 512, 384), "JPEG", quality=95, subsampling=0)},
        (512, 384), "JPEG 4:4:4 q95, .jpeg extension")
    add("small-upscale", {"jpg": encode(photo("chelsea", 120, 80), "JPEG", quality=92)}, (120, 80),
        "120x80 JPEG: upscaled (lanczos) unless --resize-only-if-bigger")
    upright = Image.fromarray(photo("coffee", 480, 320))
    for o, op in STORE_FOR_ORIENTATION.items():
        exif = Image.Exif()
        exif[0x0112] = o
        stored = upright if op is None else upright.transpose(op)
        add(f"exif-orient-{o}", {"jpg": encode(stored, "JPEG", quality=90, exif=exif.tobytes())}, (480, 320),
            f"JPEG with EXIF Orientation={o} (stored {stored.size[0]}x{stored.size[1]})")
    add("cmyk", {"jpg": encode(Image.fromarray(photo("rocket", 640, 427)).convert("CMYK"), "JPEG", quality=92)},
        (640, 427), "CMYK JPEG (Adobe, inverted, as Pillow writes it)")
    add("progressive", {"jpg": encode(photo("astronaut", 600, 450), "JPEG", quality=90, progressive=True)},
        (600, 450), "progressive JPEG")
    add("grey-jpeg", {"jpg": encode(photo("camera", 512, 512), "JPEG", quality=90)}, (512, 512),
        "greyscale JPEG (1 component)")
    add("grey-png", {"png": encode(photo("moon", 400, 400), "PNG")}, (400, 400), "greyscale 8-bit PNG")
    g16 = photo("camera", 384, 384).astype(np.uint16) * 257
    add("grey16-png", {"png": encode(Image.fromarray(g16), "PNG")}, (384, 384), "greyscale 16-bit PNG (I;16)")
    import cv2  # writes 16-bit colour PNGs, which Pillow cannot
    rgb16 = photo("chelsea", 360, 240).astype(np.uint16) * 257
    add("rgb16-png", {"png": cv2.imencode(".png", rgb16[..., ::-1])[1].tobytes()}, (360, 240), "RGB 16-bit PNG")
    a16 = (np.linspace(0, 65535, 240)[:, None] * np.ones((1, 360))).astype(np.uint16)
    rgba16 = np.dstack([rgb16[..., ::-1], a16])
    add("rgba16-png", {"png": cv2.imencode(".png", rgba16)[1].tobytes()}, (360, 240),
        "RGBA 16-bit PNG, vertical alpha ramp")
    pal = Image.fromarray(photo("astronaut", 400, 400)).quantize(255, dither=Image.Dither.NONE)
    idx = np.asarray(pal).copy()
    yy, xx = np.mgrid[:400, :400]
    idx[(yy - 120) ** 2 + (xx - 280) ** 2 < 70 ** 2] = 255  # a transparent disc
    trns = Image.fromarray(idx, "P")
    trns.putpalette(pal.getpalette()[:765] + [0, 0, 0])
    add("palette-trns", {"png": encode(trns, "PNG", transparency=255)}, (400, 400),
        "paletted PNG, one palette entry transparent (tRNS)")
    add("palette", {"png": encode(Image.fromarray(photo("coffee", 450, 300)).quantize(256), "PNG")}, (450, 300),
        "paletted PNG, 256 colours, dithered")
    rgba = np.dstack([photo("astronaut", 400, 400),
                      np.clip(255 - np.hypot(yy - 200, xx - 200) * 1.4, 0, 255).astype(np.uint8)])
    add("rgba-png", {"png": encode(rgba, "PNG")}, (400, 400), "RGBA PNG, radial alpha to fully transparent")
    la = Image.fromarray(np.dstack([photo("camera", 300, 300), rgba[50:350, 50:350, 3]]), "LA")
    add("la-png", {"png": encode(la, "PNG")}, (300, 300), "greyscale+alpha PNG")
    add("logo-rgba", {"png": encode(SOURCES["logo"](), "PNG")}, (500, 500), "RGBA graphic (skimage logo)", False)
    frames = [Image.fromarray(photo("chelsea", 451, 300)), Image.fromarray(255 - photo("coffee", 451, 300))]
    add("gif-animated", {"gif": encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100,
                                       loop=0)}, (451, 300), "animated GIF, 2 frames; frame 2 is a negative")
    add("webp-lossy", {"webp": encode(photo("rocket", 640, 427), "WEBP", quality=80)}, (640, 427), "lossy WebP")
    add("webp-alpha", {"webp": encode(rgba, "WEBP", quality=85)}, (400, 400), "lossy WebP with alpha")
    add("bmp", {"bmp": encode(photo("coffee", 300, 200), "BMP")}, (300, 200), "24-bit BMP")
    add("tiff", {"tif": encode(photo("astronaut", 320, 320), "TIFF", compression="tiff_lzw")}, (320, 320),
        "RGB TIFF, LZW, .tif extension")
    add("bilevel-png", {"png": encode(Image.fromarray(photo("page", 384, 191)).convert("1"), "PNG")}, (384, 191),
        "1-bit PNG", False)
    add("tiny-1x1", {"png": encode(Image.new("RGB", (1, 1), (200, 30, 90)), "PNG")}, (1, 1), "1x1 PNG", False)
    strip = np.tile(photo("astronaut", 500, 10), (1, 20, 1))
    add("strip-10000x10", {"png": encode(strip, "PNG")}, (10000, 10), "10000x10 PNG", False)
    # Exactly .5 after scaling: Python's round() (half to even) decides the size.
    odd = 2 * size + 5 if (2 * size + 5) % 4 == 1 else 2 * size + 7
    add("round-half-smallest", {"jpg": encode(photo("coffee", odd, 2 * size), "JPEG", quality=90)},
        (odd, 2 * size), f"{odd}x{2 * size}: the long side scales to exactly n+0.5 (keep_ratio, center_crop)")
    odd = size + 1 if (size + 1) % 4 == 1 else size + 3
    add("round-half-largest", {"jpg": encode(photo("rocket", 2 * size, odd), "JPEG", quality=90)},
        (2 * size, odd), f"{2 * size}x{odd}: the short side scales to exactly n+0.5 (keep_ratio_largest, border)")
    whole = encode(photo("chelsea", 451, 300), "JPEG", quality=90)
    add("png-as-jpg", {"jpg": encode(photo("chelsea", 360, 240), "PNG")}, (360, 240), "a PNG named .jpg")
    add("with-json", {"jpg": encode(photo("hubble_deep_field", 500, 436), "JPEG", quality=90),
                      "json": json.dumps({"caption": "deep field", "url": "http://example.com/x.jpg",
                                          "tags": ["space", "galaxy"], "nested": {"a": 1}}).encode()},
        (500, 436), "JPEG with a .json sibling (keys kept, image keys added)")
    add("with-json-png", {"png": encode(photo("coffee", 300, 200), "PNG"),
                          "json": b'{"caption": "coffee", "score": 0.5}\n'}, (300, 200), "PNG with a .json sibling")
    add("with-txt", {"jpg": encode(photo("rocket", 427, 640), "JPEG", quality=90), "txt": b"a rocket on its pad\n"},
        (427, 640), "portrait JPEG with a .txt sibling")
    decode = "decod|corrupt|invalid|truncat|unexpected|eof|format|unsupported|recogni"
    add("bomb", {"png": bomb_png()}, None, "decompression bomb: PNG header declaring 100000x100000",
        reason="large|pixel|bomb|limit|dimension|area")
    add("truncated", {"jpg": whole[: len(whole) // 2]}, None, "JPEG cut in half", reason=decode)
    add("zeros", {"jpg": bytes(len(whole))}, None, "all-zero bytes named .jpg", reason=decode)
    add("text-as-jpg", {"jpg": b"this is not an image\n" * 20}, None, "a text file named .jpg", reason=decode)
    return out


def expect(opts, w, h):
    """(kept, width or reason, height) of an upright w x h image under img2dataset's rules."""
    if min(w, h) < opts["min_image_size"]:
        return False, "too small|min-image-size", None
    if opts["max_image_area"] is not None and w * h > opts["max_image_area"]:
        return False, "area", None
    if opts["max_aspect_ratio"] is not None and max(w, h) / min(w, h) > opts["max_aspect_ratio"]:
        return False, "aspect", None
    size, mode = opts["image_size"], opts["resize_mode"]
    if mode in ("keep_ratio", "center_crop"):
        side = min(w, h)
    elif mode in ("keep_ratio_largest", "border"):
        side = max(w, h)
    else:
        side = None
    if side is not None and (not opts["resize_only_if_bigger"] or side > size):
        scale = size / side  # albumentations: max(1, round(side * scale)), Python round
        w, h = max(1, round(w * scale)), max(1, round(h * scale))
        if mode in ("center_crop", "border"):
            w = h = size
    limit = ENCODE_LIMIT.get(opts["image_format"]) if opts["image_as"] != "tensor" else None
    if limit is not None and max(w, h) > limit:  # img2dataset's encoder fails too
        return False, "encod|65535|16383|wide|high|large", None
    return True, w, h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--image-size", type=int, default=256)
    ap.add_argument("--resize-mode", default="border",
                    choices=["no", "keep_ratio", "keep_ratio_largest", "center_crop", "border"])
    ap.add_argument("--image-format", default="jpg", choices=["jpg", "png", "webp"])
    ap.add_argument("--image-quality", type=int, default=95)
    ap.add_argument("--image-as", default=None, choices=["tensor"])
    ap.add_argument("--resize-only-if-bigger", action="store_true")
    ap.add_argument("--skip-reencode", action="store_true")
    ap.add_argument("--full-decode", action="store_true")
    ap.add_argument("--min-image-size", type=int, default=0)
    ap.add_argument("--max-image-area", type=int, default=None)
    ap.add_argument("--max-aspect-ratio", type=float, default=None)
    args = ap.parse_args()
    opts = {k: getattr(args, k) for k in ("image_size", "resize_mode", "image_format", "image_quality", "image_as",
                                          "resize_only_if_bigger", "skip_reencode", "min_image_size", "max_image_area",
                                          "max_aspect_ratio")}
    inp = os.path.join(args.out, "input")
    os.makedirs(inp, exist_ok=True)
    samples, total = {}, 0
    for key, files, dims, photo_, variant, reason in variants(args.image_size):
        for ext, data in files.items():
            with open(os.path.join(inp, f"{key}.{ext}"), "wb") as f:
                f.write(data)
            total += len(data)
        if dims is None:
            samples[key] = {"kept": False, "reason_contains": reason, "variant": variant}
            continue
        kept, a, b = expect(opts, *dims)
        if not kept:
            samples[key] = {"kept": False, "reason_contains": a, "variant": variant}
            continue
        image = next(d for e, d in files.items() if e not in ("json", "txt"))
        fmt = SOURCE_FORMAT[Image.open(io.BytesIO(image)).format]
        samples[key] = {"kept": True, "width": a, "height": b, "original_width": dims[0],
                        "original_height": dims[1], "source_format": fmt, "photo": photo_, "variant": variant}
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump({"options": opts, "samples": samples}, f, indent=1, sort_keys=True)
    kept = sum(s["kept"] for s in samples.values())
    print(f"{len(samples)} samples ({kept} to keep), {total / 1e6:.1f} MB in {inp}")


if __name__ == "__main__":
    main()
