#!/usr/bin/env python3
"""Checkpoint benchmark: deep `shardsmith verify` (structure, CRC-32s, zero scan and
SHA-256 against a save-time manifest) vs `openssl dgst -sha256` and `sha256sum` over the
same files, side by side in one run, best of K. Not a test: nothing asserts a time.

usage: tests/bench/run.sh checkpoints [--gib 2] [--files 8] [--repeat 3] [--work DIR]

Inputs, generated in a temporary directory (deleted afterwards; --keep keeps them):
  one-st/    one safetensors file of --gib GiB (bf16 and f32 tensors of random bytes)
  one-pt/    one torch zip checkpoint of --gib GiB, made by real torch when the test
             suite's torch env exists (`tests/interop/setup_env.sh torch` makes it);
             skipped otherwise
  shards/    --files safetensors files of --gib/--files GiB each
Each directory gets `shardsmith manifest` first, so verify is exact.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def cached_torch_python():
    """The test suite's torch env if it was made (tests/interop/setup_env.sh torch)."""
    setup = os.path.join(REPO, "tests", "interop", "setup_env.sh")
    found = subprocess.run([setup, "--cached", "torch"], stdout=subprocess.PIPE, text=True)
    return os.path.join(found.stdout.strip(), "bin", "python") if found.returncode == 0 else ""


TORCH_PY = cached_torch_python()


def timed(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()}")
    return seconds


def best(repeat, cmd):
    return min(timed(cmd) for _ in range(repeat))


def write_safetensors(path, nbytes):
    """One file of random tensor bytes: half bf16, half f32 (8-byte aligned header)."""
    half = nbytes // 2 // 8 * 8
    header = {
        "__metadata__": {"format": "pt"},
        "a.weight": {"dtype": "F32", "shape": [half // 4], "data_offsets": [0, half]},
        "b.weight": {"dtype": "BF16", "shape": [half // 2], "data_offsets": [half, 2 * half]},
    }
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    block = os.urandom(64 << 20)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        left = 2 * half
        while left:
            k = min(left, len(block))
            f.write(block[:k])
            left -= k


TORCH_SCRIPT = """
import sys, torch
n = int(sys.argv[2]) // 2
g = torch.Generator().manual_seed(0)
sd = {"a.weight": torch.randn(n // 4, generator=g),
      "b.weight": torch.randn(n // 2, generator=g).to(torch.bfloat16)}
torch.save(sd, sys.argv[1])
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=None, help="parent of the temporary directory")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bin_ = os.path.join(REPO, "target", "release", "shardsmith")
    nbytes = int(args.gib * (1 << 30))
    work = tempfile.mkdtemp(prefix="shardsmith-ckpt-bench-", dir=args.work)
    try:
        one_st = os.path.join(work, "one-st")
        os.makedirs(one_st)
        write_safetensors(os.path.join(one_st, "model.safetensors"), nbytes)
        sets = {"safetensors, one file": one_st}
        if os.path.exists(TORCH_PY):
            one_pt = os.path.join(work, "one-pt")
            os.makedirs(one_pt)
            subprocess.run([TORCH_PY, "-c", TORCH_SCRIPT, os.path.join(one_pt, "model.pt"), str(nbytes)],
                           check=True)
            sets["torch zip, one file"] = one_pt
        else:
            print(f"torch zip case skipped: no {TORCH_PY}", file=sys.stderr)
        shards = os.path.join(work, "shards")
        os.makedirs(shards)
        for i in range(args.files):
            name = f"model-{i + 1:05d}-of-{args.files:05d}.safetensors"
            write_safetensors(os.path.join(shards, name), nbytes // args.files)
        sets[f"safetensors, {args.files} shards"] = shards
        for d in sets.values():
            subprocess.run([bin_, "manifest", d, "--quiet"], check=True)
        print(f"{os.cpu_count()} cores; {args.gib:g} GiB per set; best of {args.repeat}; warm page cache",
              file=sys.stderr)
        lines = [f"{'set':<28}{'verify':>9}{'openssl':>9}{'sha256sum':>11}{'verify/openssl':>16}{'sha256sum/verify':>18}"]
        results = {}
        for label, d in sets.items():
            files = sorted(os.path.join(d, f) for f in os.listdir(d)
                           if f.endswith((".safetensors", ".pt")))
            subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
            v = best(args.repeat, [bin_, "verify", d, "--quiet"])
            o = best(args.repeat, ["openssl", "dgst", "-sha256", *files])
            s = best(args.repeat, ["sha256sum", *files])
            results[label] = {"verify": v, "openssl": o, "sha256sum": s}
            lines.append(f"{label:<28}{v:>8.2f}s{o:>8.2f}s{s:>10.2f}s{v / o:>15.2f}x{s / v:>17.1f}x")
        lines.append("targets: verify/openssl <= 1.3x on one file; < 1.0x on a directory of files")
        print("\n".join(lines))
        print(json.dumps(results))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
