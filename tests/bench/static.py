#!/usr/bin/env python3
"""The static (musl) binary against the glibc one: the same commands on the same inputs,
in one run, runs interleaved (glibc musl, musl glibc, ...) so drift of the machine falls
on both; best and median of K each, musl/glibc, peak RSS (median). Not a test: nothing
asserts a time. It does assert that both binaries write byte-identical outputs.

usage: tests/bench/static.sh [--samples 30000] [--text-mb 200] [--verify-mib 1024] [--images 1000]
                             [--repeat 3] [--what pack,parquet,tokenize,verify,images]
       (builds both binaries, checks the musl one is static, then runs this)

Work (warm page cache; every command with its default --jobs, i.e. every core):
  pack      pack --format webdataset --shard-size 64MiB of the benchmark corpus
            (make_corpus.py, cached as bench.py caches it: ~/.cache/shardsmith/bench)
  parquet   pack --format parquet --compression snappy --row-group-size 4096 (Arrow
            buffers: the allocator-heavy path)
  tokenize  tokenize --format nanogpt --shard-tokens none, r50k_base and cl100k_base (the
            built-in tiktoken ranks: no network, no files), on bench.py's JSONL corpus
            (make_text_corpus.py, cached)
  verify    verify of the pack shards (deep tar walk + SHA-256), and manifest / verify of
            --verify-mib MiB of generated files (8 files; cached)
  images    pack --image-size 256 --resize-mode center_crop --image-format jpg of the first
            --images JPEGs of images.py's corpus (JPEG decode/encode: mozjpeg's SIMD), only
            if that corpus is cached (tests/bench/run.sh images makes it)
Byte-identical: every file of each binary's pack, parquet, tokenize and images output
(shards, token file, manifest.json), and the manifests both write of the generated files.
"""
import argparse
import filecmp
import os
import random
import shutil
import statistics
import subprocess
import sys

from bench import timed  # same timing as bench.py: os.sync() first, wall time, peak RSS by wait4

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MUSL = "x86_64-unknown-linux-musl"


def tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, files in os.walk(path) for f in files)


def identical(a, b):
    """Every file of directory (or file) a equals b's, byte for byte; returns (same, what)."""
    if os.path.isfile(a):
        return filecmp.cmp(a, b, shallow=False), os.path.basename(a)
    names = tree(a)
    if names != tree(b):
        return False, f"different file lists ({len(names)} vs {len(tree(b))} files)"
    differ = [n for n in names if not filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)]
    if differ:
        return False, f"{len(differ)} of {len(names)} files differ: {', '.join(differ[:3])}"
    return True, f"{len(names)} files ({', '.join(n for n in names if n.endswith('.json')) or 'no json'})"


def text_corpus(args, python):
    os.makedirs(args.corpus_cache, exist_ok=True)
    corpus = os.path.join(args.corpus_cache, f"text-v1-{args.text_mb}.jsonl")
    if not os.path.exists(corpus + ".complete"):
        print(f"generating {args.text_mb} MB of JSONL text in {corpus} (once; cached)", file=sys.stderr)
        subprocess.run([python, os.path.join(HERE, "make_text_corpus.py"), corpus, str(args.text_mb)], check=True)
        open(corpus + ".complete", "w").close()
    return corpus


def file_corpus(args, python):
    corpus = os.path.join(args.corpus_cache, f"corpus-v2-{args.samples}")
    if not os.path.exists(corpus + ".complete"):
        print(f"generating {args.samples} samples in {corpus} (once; cached)", file=sys.stderr)
        shutil.rmtree(corpus, ignore_errors=True)
        subprocess.run([python, os.path.join(HERE, "make_corpus.py"), corpus, str(args.samples)], check=True)
        open(corpus + ".complete", "w").close()
    return corpus


def generated_files(args, glibc):
    """--verify-mib MiB of seeded pseudo-random bytes in 8 files, with a manifest.json
    written by the glibc binary (cached)."""
    root = os.path.join(args.corpus_cache, f"verify-v1-{args.verify_mib}MiB")
    if not os.path.exists(root + ".complete"):
        print(f"generating {args.verify_mib} MiB in {root} (once; cached)", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        rng = random.Random(20261125)
        per_file = (args.verify_mib << 20) // 8
        for i in range(8):
            with open(os.path.join(root, f"part-{i:02d}.bin"), "wb") as f:
                left = per_file
                while left:
                    block = rng.randbytes(min(left, 16 << 20))
                    f.write(block)
                    left -= len(block)
        subprocess.run([glibc, "manifest", root, "--quiet"], check=True)
        open(root + ".complete", "w").close()
    return root


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--text-mb", type=int, default=200)
    ap.add_argument("--verify-mib", type=int, default=1024)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--what", default="pack,parquet,tokenize,verify,images")
    ap.add_argument("--glibc", default=os.path.join(REPO, "target", "release", "shardsmith"))
    ap.add_argument("--musl", default=os.path.join(REPO, "target", MUSL, "release", "shardsmith"))
    ap.add_argument("--work", default=os.path.join(REPO, "target", "bench-static"))
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    what = set(args.what.split(","))
    python = sys.executable
    binaries = {"glibc": args.glibc, "musl": args.musl}
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    rows, checks, failed = [], [], []

    def compare(label, argv_of, output=None, warm=None):
        """Runs argv_of(binary, out) for both binaries, interleaved, args.repeat times each;
        out is a fresh path per binary (kept after the last run). Compares the outputs."""
        if warm:
            warm()
        runs = {"glibc": [], "musl": []}
        outs = {name: os.path.join(work, f"{label.replace(' ', '-')}-{name}") for name in binaries}
        for r in range(args.repeat):
            for name in ("glibc", "musl") if r % 2 == 0 else ("musl", "glibc"):
                shutil.rmtree(outs[name], ignore_errors=True)
                if os.path.isfile(outs[name]):
                    os.remove(outs[name])
                seconds, rss, _ = timed(argv_of(binaries[name], outs[name]))
                runs[name].append((seconds, rss))
        g, m = runs["glibc"], runs["musl"]
        row = {"work": label}
        for name, rs in runs.items():
            row[name] = (min(s for s, _ in rs), statistics.median(s for s, _ in rs),
                         statistics.median(x for _, x in rs))
        rows.append(row)
        print(f"  {label}: glibc {row['glibc'][1]:.2f} s, musl {row['musl'][1]:.2f} s (medians)", file=sys.stderr)
        if output:
            same, detail = identical(output(outs["glibc"]), output(outs["musl"]))
            checks.append(f"{label}: {'IDENTICAL' if same else 'DIFFER'}: {detail}")
            if not same:
                failed.append(label)
        return outs

    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}; {args.repeat} runs of each binary, "
          f"interleaved", file=sys.stderr)
    shards = None
    if what & {"pack", "parquet", "verify"}:
        corpus = file_corpus(args, python)
        warm = lambda: subprocess.run(["tar", "cf", "/dev/null", "-C", corpus, "."], check=True)
        outs = compare("pack webdataset", lambda b, out: [b, "pack", corpus, out, "--format", "webdataset",
                                                          "--shard-size", "64MiB", "--quiet"],
                       output=lambda out: out, warm=warm)
        shards = outs["glibc"]
        if "parquet" in what:
            compare("pack parquet", lambda b, out: [b, "pack", corpus, out, "--format", "parquet", "--compression",
                                                    "snappy", "--row-group-size", "4096", "--shard-size", "64MiB",
                                                    "--quiet"],
                    output=lambda out: out, warm=warm)
    if "tokenize" in what:
        text = text_corpus(args, python)
        warm = lambda: subprocess.run(["cat", text], stdout=subprocess.DEVNULL, check=True)
        for encoding in ("r50k_base", "cl100k_base"):
            compare(f"tokenize {encoding}", lambda b, out: [b, "tokenize", text, out, "-t", encoding, "--format",
                                                            "nanogpt", "--shard-tokens", "none", "--quiet"],
                    output=lambda out: out, warm=warm)
    if "verify" in what:
        warm = lambda: subprocess.run(["cat", *(os.path.join(shards, f) for f in tree(shards))],
                                      stdout=subprocess.DEVNULL, check=True)
        compare("verify pack shards", lambda b, out: [b, "verify", shards, "--quiet"], warm=warm)
        files = generated_files(args, args.glibc)
        warm = lambda: subprocess.run(["cat", *(os.path.join(files, f) for f in tree(files))],
                                      stdout=subprocess.DEVNULL, check=True)
        compare(f"manifest {args.verify_mib} MiB", lambda b, out: [b, "manifest", files, "--output", out, "--quiet"],
                output=lambda out: out, warm=warm)
        compare(f"verify {args.verify_mib} MiB", lambda b, out: [b, "verify", files, "--quiet"], warm=warm)
    if "images" in what:
        images = os.path.join(args.corpus_cache, "images-v1-5000")
        if not os.path.isdir(images):  # images.py renames it into place when complete
            print(f"images skipped: no {images} (tests/bench/run.sh images makes it)", file=sys.stderr)
        else:
            listing = os.path.join(work, "images.txt")
            names = sorted(f for f in os.listdir(images) if f.endswith(".jpg"))[:args.images]
            with open(listing, "w") as f:
                f.write("".join(n + "\n" for n in names))
            warm = lambda: subprocess.run(["cat", *(os.path.join(images, n) for n in names)],
                                          stdout=subprocess.DEVNULL, check=True)
            compare(f"images {len(names)} to 256", lambda b, out: [
                b, "pack", images, out, "--files-from", listing, "--format", "webdataset", "--image-size", "256",
                "--resize-mode", "center_crop", "--image-format", "jpg", "--image-quality", "95", "--quiet"],
                output=lambda out: out, warm=warm)

    size = {name: os.path.getsize(b) for name, b in binaries.items()}
    lines = [
        f"{os.cpu_count()} cores, default --jobs; best / median of {args.repeat} runs each, interleaved; "
        f"peak RSS: median; load average at the end {os.getloadavg()[0]:.2f}",
        "",
        "| work | glibc s (best / median) | musl s (best / median) | musl/glibc (best / median) | peak RSS glibc / musl |",
        "| --- | --- | --- | --- | --- |",
        f"| binary size | {size['glibc'] / 1e6:.1f} MB | {size['musl'] / 1e6:.1f} MB | "
        f"{size['musl'] / size['glibc']:.3f} | |",
    ]
    for row in rows:
        g, m = row["glibc"], row["musl"]
        lines.append(f"| {row['work']} | {g[0]:.2f} / {g[1]:.2f} | {m[0]:.2f} / {m[1]:.2f} | "
                     f"{m[0] / g[0]:.3f} / {m[1] / g[1]:.3f} | {g[2]:.0f} / {m[2]:.0f} MiB |")
    lines += ["", "outputs of the two binaries:", *(f"  {c}" for c in checks)]
    print("\n".join(lines))
    if failed:
        sys.exit(f"ERROR: the glibc and musl binaries wrote different bytes for: {', '.join(failed)} "
                 f"(kept in {work})")


if __name__ == "__main__":
    main()
