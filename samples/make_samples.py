#!/usr/bin/env python3
"""Regenerates samples/raw: a small, deterministic raw corpus for `shardsmith pack`.

usage: python3 samples/make_samples.py   (needs Pillow; run from the repository root)
The committed files are the output of this script; it is kept so that they can be
remade or extended, not run by the tests.
"""
import io, json, os, random, shutil
from PIL import Image, ImageDraw

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "raw")
rng = random.Random(2026)


def image(side, fmt, seed):
    r = random.Random(seed)
    img = Image.new("RGB", (side, side), tuple(r.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(6):
        x0, y0 = r.randrange(side), r.randrange(side)
        x1, y1 = x0 + r.randrange(4, side // 2 + 5), y0 + r.randrange(4, side // 2 + 5)
        draw.ellipse((x0, y0, x1, y1), fill=tuple(r.randrange(256) for _ in range(3)))
    buf = io.BytesIO()
    img.save(buf, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
    return buf.getvalue()


def mask(side, seed):
    r = random.Random(seed)
    img = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(img)
    for label in (1, 2, 3):
        x0, y0 = r.randrange(side // 2), r.randrange(side // 2)
        draw.rectangle((x0, y0, x0 + side // 3, y0 + side // 3), fill=label)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def write(rel, data):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


WORDS = "a small cat sits on the warm stone wall while birds circle above the old harbour".split()


def caption():
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) + "\n"


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    n = 0
    for cls, count, fmt, ext in [("cat", 5, "JPEG", "jpg"), ("dog", 5, "JPEG", "jpg"), ("bird", 4, "PNG", "png")]:
        for i in range(1, count + 1):
            key = f"animals/{cls}/{i:04d}"
            write(f"{key}.{ext}", image(rng.choice([32, 48, 64]), fmt, n))
            write(f"{key}.json", json.dumps({"label": cls, "index": n, "bbox": [2, 3, 20, 24]}))
            write(f"{key}.txt", caption())
            n += 1
    for i in range(1, 5):
        key = f"landscapes/valley_{i:04d}"
        write(f"{key}.jpg", image(64, "JPEG", 100 + i))
        write(f"{key}.txt", caption())
    for i in range(1, 5):
        key = f"segmentation/scene_{i:04d}"
        write(f"{key}.jpg", image(48, "JPEG", 200 + i))
        write(f"{key}.seg.png", mask(48, 200 + i))
        write(f"{key}.json", json.dumps({"classes": ["background", "road", "car", "person"]}))
    for name in ["zürich_0001", "são_paulo_0002", "東京_0003"]:
        write(f"landmarks/{name}.jpg", image(40, "JPEG", len(name)))
        write(f"landmarks/{name}.txt", f"{name.rsplit('_', 1)[0]} at dusk\n")
    for i in range(1, 3):
        write(f"camera/IMG_{i:04d}.JPG", image(48, "JPEG", 300 + i))
        write(f"camera/IMG_{i:04d}.json", json.dumps({"iso": 100 * i, "exposure": "1/250"}))
    for i in range(1, 6):
        key = f"text/doc_{i:04d}"
        write(f"{key}.txt", "" if i == 3 else caption() * rng.randint(1, 20))
        write(f"{key}.cls", str(i % 2))


if __name__ == "__main__":
    main()
