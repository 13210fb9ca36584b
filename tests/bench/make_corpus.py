#!/usr/bin/env python3
"""Deterministic raw image corpus for the benchmark: ROOT/cls_NNN/img_NNNNNNNN.{jpg,json,txt}.

usage: make_corpus.py ROOT N_SAMPLES
JPEG sides vary from 32 to 384 pixels (about 1 KB to 60 KB each), like a mix of
thumbnails and ImageNet-sized photos; a small JSON label and a caption go with each.
Written for shardsmith's benchmark; needs Pillow (in the interop env).
"""
import io
import json
import os
import random
import sys

from PIL import Image

VOCABULARY = ("tensor shard gpu storage lustre checkpoint token label image cloud "
              "river forest harbour bridge street market night morning").split()


def photo(rng, side):
    """Sensor-like noise over a gradient: compresses about as badly as a real photo."""
    noise = Image.effect_noise((side, side), rng.uniform(10, 60))
    gradient = Image.linear_gradient("L").resize((side, side)).rotate(rng.choice((0, 90, 180, 270)))
    return Image.merge("RGB", (gradient, noise, noise.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))


def main():
    root, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(20261121)
    for i in range(count):
        folder = os.path.join(root, f"cls_{i % 100:03d}")
        os.makedirs(folder, exist_ok=True)
        base = os.path.join(folder, f"img_{i:08d}")
        side = rng.choice((32, 64, 96, 128, 160, 224, 256, 384))
        buffer = io.BytesIO()
        photo(rng, side).save(buffer, format="JPEG", quality=rng.choice((70, 85, 95)))
        with open(base + ".jpg", "wb") as f:
            f.write(buffer.getvalue())
        with open(base + ".json", "w") as f:
            json.dump({"label": i % 100, "width": side, "height": side, "source": "synthetic"}, f)
        with open(base + ".txt", "w") as f:
            f.write(" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(4, 30))))


if __name__ == "__main__":
    main()
