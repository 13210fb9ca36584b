#!/usr/bin/env python3
"""Signing benchmark: `shardsmith sign` and `shardsmith verify --signature` of a checkpoint
directory against model_signing's key method (`sign key` / `verify key`, through its
Python API exactly as its CLI calls it, timed after the import) over the same directory,
side by side in one run, best of K, with each run's peak RSS. Not a test: nothing
asserts a time.

usage: tests/bench/run.sh signing [--gib 2] [--files 8] [--repeat 3] [--work DIR] [--keep]

The directory: --files safetensors shards of --gib/--files GiB of random bf16/f32 bytes,
a config.json, and the `shardsmith manifest` written at save time, so both shardsmith
commands also check every shard against it (model_signing only hashes). The P-256 test
key of tests/fixtures/model_signing signs. Warm page cache.
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
KEYS = os.path.join(REPO, "tests", "fixtures", "model_signing", "keys")

# Runs in model_signing's venv: import first, then time only the work.
RUNNER = """
import sys, time, pathlib
import model_signing
what, model, sig, key = sys.argv[1:5]
model, sig = pathlib.Path(model), pathlib.Path(sig)
hashing = model_signing.hashing.Config().set_ignored_paths(paths=[], ignore_git_paths=True)
start = time.perf_counter()
if what == "sign":
    model_signing.signing.Config().use_elliptic_key_signer(private_key=key, password=None) \\
        .set_hashing_config(hashing).sign(model, sig)
else:
    model_signing.verifying.Config().use_elliptic_key_verifier(public_key=key) \\
        .set_hashing_config(hashing).set_ignore_unsigned_files(False).verify(model, sig)
print(time.perf_counter() - start)
"""


def run(cmd):
    """(seconds, peak RSS MiB, stdout) of one run; exits on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{err.decode()}{out.decode()}")
    return seconds, usage.ru_maxrss / 1024, out


def best(repeat, fn):
    return min((fn() for _ in range(repeat)), key=lambda r: r[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bin_ = os.path.join(REPO, "target", "release", "shardsmith")
    python = os.environ["MODEL_SIGNING_PYTHON"]
    nbytes = int(args.gib * (1 << 30))
    work = tempfile.mkdtemp(prefix="shardsmith-sign-bench-", dir=args.work)
    try:
        ckpt = os.path.join(work, "ckpt")
        os.makedirs(ckpt)
        # Written by a child: this process stays small, since a child's peak RSS as
        # wait4 reports it includes what it was forked from.
        subprocess.run([sys.executable, "-c",
                        "import sys; sys.path.insert(0, sys.argv[1]); from checkpoints import write_safetensors; "
                        "[write_safetensors(f'{sys.argv[2]}/model-{i + 1:05d}-of-{int(sys.argv[3]):05d}.safetensors', "
                        "int(sys.argv[4])) for i in range(int(sys.argv[3]))]",
                        HERE, ckpt, str(args.files), str(nbytes // args.files)], check=True)
        with open(os.path.join(ckpt, "config.json"), "w") as f:
            json.dump({"hidden_size": 4096, "num_layers": 32}, f)
        subprocess.run([bin_, "manifest", ckpt, "--quiet"], check=True)
        subprocess.run(["cat", *[os.path.join(ckpt, f) for f in os.listdir(ckpt)]],
                       stdout=subprocess.DEVNULL, check=True)
        priv, pub = os.path.join(KEYS, "p256-private.pem"), os.path.join(KEYS, "p256-public.pem")
        ours_sig, ref_sig = os.path.join(work, "ours.sig"), os.path.join(work, "ref.sig")

        def ref(what, sig, key):
            def go():
                _, rss, out = run([python, "-c", RUNNER, what, ckpt, sig, key])
                return float(out), rss
            return go

        def ours(cmd):
            def go():
                seconds, rss, _ = run(cmd)
                return seconds, rss
            return go

        import_only = best(args.repeat, ours([python, "-c", "import model_signing"]))
        results = {
            "sign": (best(args.repeat, ours([bin_, "sign", ckpt, "--private-key", priv, "--signature", ours_sig, "--quiet"])),
                     best(args.repeat, ref("sign", ref_sig, priv))),
            "verify": (best(args.repeat, ours([bin_, "verify", ckpt, "--signature", ours_sig, "--public-key", pub, "--quiet"])),
                       best(args.repeat, ref("verify", ref_sig, pub))),
        }
        # Each side accepts the other's bundle (the interop tests check this in depth).
        run([bin_, "verify", ckpt, "--signature", ref_sig, "--public-key", pub, "--quiet"])
        run([python, "-c", RUNNER, "verify", ckpt, ours_sig, pub])
        print(f"{os.cpu_count()} cores; {args.gib:g} GiB in {args.files} safetensors files + config.json + "
              f"manifest; best of {args.repeat}; warm page cache; model_signing timed after its import "
              f"({import_only[0]:.2f} s, {import_only[1]:.0f} MiB to import)", file=sys.stderr)
        lines = [f"{'work':<8}{'shardsmith':>12}{'model_signing':>15}{'speed-up':>10}{'RSS ours':>10}{'RSS theirs':>12}"]
        for what, ((o, orss), (r, rrss)) in results.items():
            lines.append(f"{what:<8}{o:>11.2f}s{r:>14.2f}s{r / o:>9.2f}x{orss:>8.0f}MiB{rrss:>10.0f}MiB")
        lines.append("target: no slower than model_signing (>= 1.0x), goal 2x; shardsmith also verifies "
                     "every shard against the manifest and its structure in the same read")
        print("\n".join(lines))
        print(json.dumps({k: {"shardsmith_s": v[0][0], "model_signing_s": v[1][0],
                              "shardsmith_rss_mib": v[0][1], "model_signing_rss_mib": v[1][1]}
                          for k, v in results.items()}))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
