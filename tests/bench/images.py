#!/usr/bin/env python3
"""Image benchmark: `shardsmith pack --image-size 256 --resize-mode center_crop` against
img2dataset 1.47.0's Resizer doing the same work on every core, side by side in one run,
best of K. Not a test: nothing asserts a time.

usage: tests/bench/run.sh images [--images 5000] [--repeat 3] [--size 256] [--psnr-images 200]
                                 [--work DIR] [--keep]
       (runs in the images venv: tests/interop/setup_env.sh images)

Corpus (made once, cached under ~/.cache/shardsmith/bench/images-v1-N): N JPEGs of
1-3 MP, quality 88-92, 4:2:0, from the natural photos bundled with scikit-image (crops,
flips, scales, colour and gamma shifts, luminance grain), deterministic.

  img2dataset  Resizer(image_size, "center_crop", resize_only_if_bigger=False,
               encode_format="jpg", encode_quality=95) in multiprocessing.Pool(os.cpu_count());
               each worker reads a file and resizes it; the output bytes are counted, not
               written. Timed from the first task to the last result: the import and the
               pool start-up are not counted. CPU: the workers' own user+system seconds in
               that window; RSS: the sum of every process's peak (the parent's included).
  shardsmith   pack CORPUS OUT --format wds --image-size 256 --resize-mode center_crop
               --image-format jpg --image-quality 95 --quiet: the whole process (start-up,
               shard writing, manifest, fsync included); its own peak RSS and CPU seconds;
               by default (large JPEGs decoded at a reduced DCT scale) and with --full-decode.
Warm page cache; runs alternate. Before any figure is printed the outputs are compared:
same number of 256x256 images; PSNR of shardsmith's vs img2dataset's pixels on the first
--psnr-images images.
"""
import argparse
import io
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # albumentations asks PyPI at import otherwise

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release", "shardsmith")
SOURCES = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "retina", "immunohistochemistry",
           "stereo_motorcycle")
ASPECTS = (4 / 3, 3 / 2, 16 / 9, 1.0, 3 / 4, 2 / 3)


# ---------------------------------------------------------------- corpus
_sources = {}


def source(name):
    if name not in _sources:
        import skimage.data
        img = getattr(skimage.data, name)()
        _sources[name] = img[0] if name == "stereo_motorcycle" else img  # (left, right, disparity)
    return _sources[name]


def make_photo(i):
    """JPEG bytes of photo i: a random crop of a bundled photo, flipped, scaled to 1-3 MP,
    colour-shifted, with grain."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(1_000_003 * i + 7)
    src = source(SOURCES[i % len(SOURCES)])
    sh, sw = src.shape[:2]
    aspect = ASPECTS[rng.integers(len(ASPECTS))]
    pixels = rng.uniform(1.0e6, 3.0e6)
    w = int(math.sqrt(pixels * aspect))
    h = int(pixels / w)
    cw, ch = (sw, int(sw / aspect)) if sw / sh < aspect else (int(sh * aspect), sh)
    f = rng.uniform(0.5, 1.0)
    cw, ch = max(16, int(cw * f)), max(16, int(ch * f))
    x, y = rng.integers(0, sw - cw + 1), rng.integers(0, sh - ch + 1)
    img = Image.fromarray(src[y:y + ch, x:x + cw]).resize((w, h), Image.BICUBIC)
    if rng.random() < 0.5:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    a = np.asarray(img, dtype=np.float32) / 255
    a = a ** rng.uniform(0.8, 1.25) * rng.uniform(0.85, 1.15, size=3).astype(np.float32)
    a = a * 255 + rng.standard_normal((h, w, 1), dtype=np.float32) * rng.uniform(1.5, 4.0)
    buf = io.BytesIO()
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=int(rng.integers(88, 93)))
    return buf.getvalue()


def _write_photo(job):
    i, directory = job
    with open(os.path.join(directory, f"{i:06d}.jpg"), "wb") as f:
        f.write(make_photo(i))


def corpus(cache, n):
    path = os.path.join(cache, f"images-v1-{n}")
    if not os.path.isdir(path):
        import multiprocessing
        tmp = path + ".partial"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        print(f"generating {n} JPEGs in {path} (once; cached)", file=sys.stderr)
        with multiprocessing.Pool(os.cpu_count()) as pool:
            pool.map(_write_photo, [(i, tmp) for i in range(n)], chunksize=16)
        os.rename(tmp, path)
    return path


# ---------------------------------------------------------------- img2dataset side
_resizer = None


def _init(size):
    global _resizer
    from img2dataset.resizer import Resizer
    _resizer = Resizer(image_size=size, resize_mode="center_crop", resize_only_if_bigger=False,
                       encode_format="jpg", encode_quality=95)


def _resize(path):
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "rb") as f:
        data = f.read()
    img, w, h, _, _, err = _resizer(io.BytesIO(data))
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (os.getpid(), before.ru_utime + before.ru_stime, after.ru_utime + after.ru_stime, after.ru_maxrss,
            len(img) if img else 0, (w, h), err)


def _pid(_):
    time.sleep(0.05)
    return os.getpid()


def img2dataset_run(list_file, size):
    """Runs in a child process: prints one JSON line of what it measured."""
    import multiprocessing
    import resource
    files = open(list_file).read().split("\n")
    with multiprocessing.Pool(os.cpu_count(), initializer=_init, initargs=(size,)) as pool:
        pool.map(_pid, range(4 * os.cpu_count()), chunksize=1)  # every worker up and initialised
        start = time.perf_counter()
        results = list(pool.imap_unordered(_resize, files, chunksize=8))
        seconds = time.perf_counter() - start
    cpu, rss = {}, {}
    for pid, c0, c1, peak, *_ in results:
        lo, hi = cpu.get(pid, (c0, c1))
        cpu[pid] = (min(lo, c0), max(hi, c1))
        rss[pid] = max(rss.get(pid, 0), peak)
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "seconds": seconds, "images": sum(1 for r in results if r[6] is None),
        "errors": sorted({r[6] for r in results if r[6] is not None})[:5],
        "sizes": sorted({r[5] for r in results if r[6] is None}),
        "out_bytes": sum(r[4] for r in results), "cpu": sum(hi - lo for lo, hi in cpu.values()),
        "rss_mib": (parent + sum(rss.values())) / 1024, "workers": len(rss)}))


# ---------------------------------------------------------------- shardsmith side
# Default: large JPEGs decoded at a reduced DCT scale; --full-decode: in full, as OpenCV.
VARIANTS = (("shardsmith pack", []), ("shardsmith pack --full-decode", ["--full-decode"]))


def pack_cmd(inp, out, size):
    usage = subprocess.run([BIN, "pack", "--help"], capture_output=True, text=True).stdout
    where = ["-o", out] if "--output" in usage or "\n  -o" in usage else [out]
    return [BIN, "pack", inp, *where, "--format", "wds", "--image-size", str(size), "--resize-mode",
            "center_crop", "--image-format", "jpg", "--image-quality", "95", "--quiet"]


def timed(cmd):
    """(wall seconds, peak RSS MiB, CPU seconds, stdout) of one process (os.wait4); exits on failure."""
    os.sync()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}\n{err.decode()[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, out


def tar_images(out_dir):
    """{key: jpg bytes} of the shards."""
    images = {}
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".tar"):
            with tarfile.open(os.path.join(out_dir, name)) as tar:
                for m in tar:
                    key, _, ext = m.name.partition(".")
                    if ext == "jpg":
                        images[key] = tar.extractfile(m).read()
    return images


def agreement(files, images, size, n):
    """(min, mean) PSNR of shardsmith's vs img2dataset's decoded pixels on n images."""
    import numpy as np
    from PIL import Image
    _init(size)
    values = []
    for path in files[:n]:
        key = os.path.basename(path).partition(".")[0]
        theirs = np.asarray(Image.open(io.BytesIO(_resizer(io.BytesIO(open(path, "rb").read()))[0])).convert("RGB"))
        ours = np.asarray(Image.open(io.BytesIO(images[key])).convert("RGB"))
        if ours.shape != theirs.shape:
            sys.exit(f"{key}: shardsmith {ours.shape} vs img2dataset {theirs.shape}")
        mse = np.mean((ours.astype(np.float64) - theirs) ** 2)
        values.append(100.0 if mse == 0 else 10 * math.log10(255 ** 2 / mse))
    return min(values), sum(values) / len(values)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_img2dataset":
        return img2dataset_run(sys.argv[2], int(sys.argv[3]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--work", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--psnr-images", type=int, default=200, help="images compared with img2dataset's")
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    inp = corpus(args.corpus_cache, args.images)
    files = sorted(os.path.join(inp, f) for f in os.listdir(inp))
    in_bytes = sum(os.path.getsize(f) for f in files)
    pixels = []
    from PIL import Image
    for f in files[:200]:
        with Image.open(f) as im:
            pixels.append(im.size[0] * im.size[1])
    work = tempfile.mkdtemp(prefix="shardsmith-images-bench-", dir=args.work)
    try:
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm page cache
        listing = os.path.join(work, "files.txt")
        with open(listing, "w") as f:
            f.write("\n".join(files))
        theirs = []
        ours = {name: [] for name, _ in VARIANTS}
        for _ in range(args.repeat):
            _, rss, _, stdout = timed([sys.executable, os.path.abspath(__file__), "_img2dataset", listing,
                                       str(args.size)])
            r = json.loads(stdout)
            theirs.append((r["seconds"], r["rss_mib"], r["cpu"], r))
            for i, (name, extra) in enumerate(VARIANTS):
                out = os.path.join(work, f"out{i}")
                shutil.rmtree(out, ignore_errors=True)
                seconds, rss, cpu, _ = timed(pack_cmd(inp, out, args.size) + extra)
                ours[name].append((seconds, rss, cpu, None))
        ref = theirs[0][3]
        if ref["images"] != len(files) or ref["sizes"] != [[args.size, args.size]]:
            sys.exit(f"img2dataset: {ref['images']} of {len(files)} images, sizes {ref['sizes']}, "
                     f"errors {ref['errors']}")
        judged = {}
        for i, (name, _) in enumerate(VARIANTS):
            out = os.path.join(work, f"out{i}")
            images = tar_images(out)
            skipped = json.load(open(os.path.join(out, "manifest.json"))).get("skipped", [])
            if len(images) != len(files):
                sys.exit(f"{name}: {len(images)} images of {len(files)}; skipped: {skipped[:3]}")
            sizes = set()
            for data in list(images.values())[:200]:
                with Image.open(io.BytesIO(data)) as im:
                    sizes.add(im.size)
            if sizes != {(args.size, args.size)}:
                sys.exit(f"{name}: output sizes {sorted(sizes)}")
            judged[name] = (*agreement(files, images, args.size, args.psnr_images),
                            sum(len(b) for b in images.values()))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    def row(name, runs, out_bytes):
        best = min(runs, key=lambda r: r[0])
        med = statistics.median(r[0] for r in runs)
        return (f"| {name} | {best[0]:.2f} / {med:.2f} | {len(files) / best[0]:.0f} | {in_bytes / best[0] / 1e6:.0f} | "
                f"{out_bytes / 1e6:.1f} | {statistics.median(r[1] for r in runs):.0f} | "
                f"{statistics.median(r[2] for r in runs):.1f} |"), best[0]

    cores = os.cpu_count()
    print(f"{len(files)} JPEGs, {in_bytes / 1e6:.0f} MB, {statistics.mean(pixels) / 1e6:.2f} MP on average "
          f"(first 200); {args.size}x{args.size} center_crop, JPEG q95; {cores} cores; best of {args.repeat}; "
          f"warm page cache", file=sys.stderr)
    r1, t1 = row(f"img2dataset Resizer, Pool({cores})", theirs, ref["out_bytes"])
    print("| work | wall s (best / median) | images/s | input MB/s | output MB | peak RSS MiB | CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(r1)
    report = {"images": len(files), "input_bytes": in_bytes, "img2dataset_s": t1,
              "img2dataset_out_bytes": ref["out_bytes"],
              "img2dataset_rss_mib": statistics.median(r[1] for r in theirs)}
    lines = []
    for name, _ in VARIANTS:
        low, mean, out_bytes = judged[name]
        r2, t2 = row(name, ours[name], out_bytes)
        print(r2)
        lines.append(f"{name}: {t1 / t2:.2f}x img2dataset's throughput; output size {out_bytes / ref['out_bytes']:.3f}x; "
                     f"PSNR vs img2dataset on {args.psnr_images} images: min {low:.2f} dB, mean {mean:.2f} dB")
        report[name] = {"seconds": t2, "speedup": t1 / t2, "out_bytes": out_bytes,
                        "rss_mib": statistics.median(r[1] for r in ours[name]), "psnr_min": low, "psnr_mean": mean}
    print()
    print("\n".join(lines))
    print("img2dataset's outputs are counted, not written; its RSS is the sum of its "
          f"{ref['workers']} workers' and the parent's peaks; shardsmith writes shards and a manifest")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
