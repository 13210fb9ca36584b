#!/usr/bin/env python3
"""Python API benchmark (issue 18): `shardsmith.verify()` from Python against the CLI's
`shardsmith verify` on the same dataset, in one run, interleaved. Not a test: nothing
asserts a time. Target: the binding adds no measurable cost (< 2 %).

usage: tests/bench/run.sh api [--gib 1] [--repeat 7]

The `shardsmith-api` wheel is built with maturin (the pinned tools venv of
tests/wheels.sh) and installed into a fresh venv; the CLI is target/release/shardsmith,
built by run.sh. The dataset (cached under ~/.cache/shardsmith/bench/api-<gib>gib) is
--gib GiB of incompressible 512 KiB samples packed by shardsmith into 256 MiB WebDataset
shards with their manifest, so both sides hash every byte against the manifest and walk
every tar header. The page cache is warm (one un-timed run of each first).

Rows, each the median of --repeat runs:
  CLI process            `shardsmith verify DIR --quiet`, wall time of the process
  Python process         `python -c "import shardsmith; shardsmith.verify(DIR)"`, wall time
                         of the process (interpreter start and import included)
  Python call            the `shardsmith.verify(DIR)` call alone, timed inside one process
  Python start-up        `python -c "import shardsmith"`: what the process row adds
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release", "shardsmith")

CALL = r"""
import sys, time, shardsmith
path, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    t = time.perf_counter()
    report = shardsmith.verify(path)
    print(time.perf_counter() - t, int(report.ok), report.files_checked, report.bytes_checked)
"""


def dataset(gib):
    root = os.path.expanduser(f"~/.cache/shardsmith/bench/api-{gib:g}gib")
    shards = os.path.join(root, "shards")
    if os.path.exists(os.path.join(root, ".complete")):
        return shards
    subprocess.run(["rm", "-rf", root], check=True)
    raw = os.path.join(root, "raw")
    os.makedirs(raw)
    count = int(gib * 2048)
    print(f"generating {count} samples of 512 KiB in {raw}", file=sys.stderr)
    for i in range(count):
        with open(os.path.join(raw, f"{i:06d}.bin"), "wb") as f:
            f.write(os.urandom(512 << 10))
        with open(os.path.join(raw, f"{i:06d}.cls"), "w") as f:
            f.write(str(i % 1000))
    subprocess.run([BIN, "pack", raw, shards, "--shard-size", "256MiB", "--quiet"], check=True)
    subprocess.run(["rm", "-rf", raw], check=True)
    open(os.path.join(root, ".complete"), "w").close()
    return shards


def api_venv(work):
    tools = subprocess.run([os.path.join(REPO, "tests", "interop", "setup_env.sh"), "wheels"],
                           check=True, capture_output=True, text=True).stdout.strip()
    dist = os.path.join(work, "dist")
    subprocess.run([os.path.join(tools, "bin", "maturin"), "build", "--release", "--locked",
                    "--quiet", "-m", os.path.join(REPO, "cli", "python", "Cargo.toml"),
                    "-o", dist], check=True, stdout=sys.stderr)
    venv = os.path.join(work, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    wheel = glob.glob(os.path.join(dist, "shardsmith_api-*.whl"))
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet",
                    "--disable-pip-version-check", "--no-index", *wheel], check=True)
    return os.path.join(venv, "bin", "python")


def wall(cmd):
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(f"{cmd} exited {done.returncode}")
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    shards = dataset(args.gib)
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(shards, "*")))
    with tempfile.TemporaryDirectory(prefix="shardsmith-api-bench.") as work:
        python = api_venv(work)
        cli = [BIN, "verify", shards, "--quiet"]
        proc = [python, "-c", "import sys, shardsmith; "
                "sys.exit(0 if shardsmith.verify(sys.argv[1]).ok else 1)", shards]
        wall(cli), wall(proc)  # warm the page cache and both programs
        start = [python, "-c", "import shardsmith"]
        cli_t, proc_t, call_t, start_t = [], [], [], []
        for _ in range(args.repeat):
            cli_t.append(wall(cli))
            proc_t.append(wall(proc))
            start_t.append(wall(start))
            out = subprocess.run([python, "-c", CALL, shards, "1"], check=True,
                                 capture_output=True, text=True).stdout.split()
            if out[1] != "1":
                sys.exit(f"shardsmith.verify found problems: {out}")
            call_t.append(float(out[0]))
    cli_m = statistics.median(cli_t)
    print(f"\nshardsmith.verify() vs `shardsmith verify`: {size / (1 << 30):.2f} GiB in "
          f"{len(glob.glob(os.path.join(shards, '*.tar')))} shards, median of {args.repeat}, "
          f"{os.cpu_count()} cores, warm page cache\n")
    print("| run | median s | min s | vs CLI |")
    print("|---|---:|---:|---:|")
    for name, times in [("`shardsmith verify DIR --quiet` (CLI process)", cli_t),
                        ("`python -c 'shardsmith.verify(DIR)'` (process)", proc_t),
                        ("`shardsmith.verify(DIR)` (the call alone)", call_t),
                        ("`python -c 'import shardsmith'` (start-up alone)", start_t)]:
        m = statistics.median(times)
        print(f"| {name} | {m:.3f} | {min(times):.3f} | {m / cli_m:.3f}x |")


if __name__ == "__main__":
    main()
