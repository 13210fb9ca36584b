#!/usr/bin/env python3
"""How shardsmith's wall time scales with -j on this machine (issue 32's table), with the
anchors run on the same inputs in the same run. Not a test: nothing asserts a time.

usage: tests/bench/run.sh scale [--jobs-list 1,2,4,...] [--repeat 2] [--samples 30000]
                                [--text-mb 200] [--big-mib 2048] [--what pack,tokenize,verify,manifest]
                                [--bin PATH]
       python3 tests/bench/scale.py --bin ./shardsmith ...   (a bare machine: Python 3's
                                standard library is all the core needs; anchors whose tool is
                                missing are skipped, saying so)

Rows (-j N on each; best of --repeat; rounds interleaved, -j order reversed every other
round; page cache warm; os.sync() before every timed run; peak RSS from wait4):
  pack-wds       pack --format webdataset --shard-size 64MiB        (the image corpus)
  pack-mds       pack --format mds --hashes sha1 --shard-size 64MiB
  pack-parquet   pack --format parquet --compression snappy --row-group-size 4096
  tokenize       tokenize -t r50k_base --format nanogpt --shard-tokens none  (JSONL text)
  verify-4       verify of 4 files of --big-mib/8 (random bytes, with their manifest)
  verify-16      verify of 16 files of --big-mib/32
  verify-big     verify of one file of --big-mib (chunk digests from 1 GiB up)
  manifest-big   manifest of that file (--output elsewhere)
--what takes row names or their first word (pack, verify, ...). Anchors, in the same rounds:
`tar cf` of the corpus and N `cat`s reading it (xargs -P N, N = the most -j); `xargs -P N
sha256sum` over each set of files; Python tiktoken's encode_ordinary_batch on every core
(reference.py tokenize) and gigatoken 0.10.0's encode_files (reference.py gigatoken), whose
token files are compared with shardsmith's. Every pack, tokenize and manifest output must
have the same root digest at every -j.
"""
import argparse
import filecmp
import glob
import json
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20
# make_corpus.py's JPEG sizes (bytes, mean over the 30,000-sample corpus) by side and
# quality, and how much they grow with its noise (relative, per 25 of sigma): the stdlib
# corpus writes blobs of these sizes where Pillow is missing.
JPEG_MEAN = {32: (956, 1130, 1485), 64: (1925, 2590, 3983), 96: (3462, 5046, 8114),
             128: (5618, 8485, 13815), 160: (8454, 12832, 21320), 224: (16129, 24348, 41138),
             256: (20750, 31678, 53711), 384: (45393, 69976, 120144)}
JPEG_SLOPE = {70: 0.5, 85: 0.4, 95: 0.3}
VOCABULARY = ("tensor shard gpu storage lustre checkpoint token label image cloud "
              "river forest harbour bridge street market night morning").split()
ROWS = ["pack-wds", "pack-mds", "pack-parquet", "tokenize", "verify-4", "verify-16", "verify-big",
        "manifest-big"]


def cores():
    return len(os.sched_getaffinity(0))


def default_jobs(n):
    jobs = [1]
    while jobs[-1] * 2 <= n:
        jobs.append(jobs[-1] * 2)
    return jobs if jobs[-1] == n else jobs + [n]


def timed(cmd, env=None, stdin=None, discard=False):
    """(wall seconds, peak RSS MiB, stdout) of cmd; dirty pages are flushed first. The
    child's peak RSS (wait4's ru_maxrss) is at least this process's own peak when it
    forked it (the child starts in its memory), so this script streams what it reads and
    stays far below what it measures."""
    os.sync()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL if discard else out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{err.read().decode()[-3000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read()


def stdlib_corpus(root, count):
    """make_corpus.py's tree without Pillow: the same names, JSON labels and captions (the
    same random draws), and in place of each JPEG a blob of its expected size (random
    bytes between the start and end markers, so pack's content checks take it)."""
    rng = random.Random(20261121)
    for i in range(count):
        folder = os.path.join(root, f"cls_{i % 100:03d}")
        os.makedirs(folder, exist_ok=True)
        base = os.path.join(folder, f"img_{i:08d}")
        side = rng.choice((32, 64, 96, 128, 160, 224, 256, 384))
        sigma = rng.uniform(10, 60)
        rng.choice((0, 90, 180, 270))
        quality = rng.choice((70, 85, 95))
        size = int(JPEG_MEAN[side][(70, 85, 95).index(quality)] * (1 + JPEG_SLOPE[quality] * (sigma - 35) / 25))
        with open(base + ".jpg", "wb") as f:
            f.write(b"\xff\xd8\xff\xe0" + random.Random(i).randbytes(max(0, size - 6)) + b"\xff\xd9")
        with open(base + ".json", "w") as f:
            json.dump({"label": i % 100, "width": side, "height": side, "source": "synthetic"}, f)
        with open(base + ".txt", "w") as f:
            f.write(" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(4, 30))))


def image_corpus(args):
    """bench.py's cached corpus when this Python has Pillow, else the stdlib one."""
    has_pil = subprocess.run([sys.executable, "-c", "import PIL"], capture_output=True).returncode == 0
    name = f"corpus-v2-{args.samples}" if has_pil else f"corpus-stdlib-v1-{args.samples}"
    root = os.path.join(args.corpus_cache, name)
    # A corpus copied without bench.py's marker counts when every file is there.
    if not os.path.exists(root + ".complete") and not (
            os.path.isdir(root) and sum(len(f) for _, _, f in os.walk(root)) == 3 * args.samples):
        print(f"generating {args.samples} samples in {root} (once; cached)", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)
        if has_pil:
            subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), root, str(args.samples)], check=True)
        else:
            print("  Pillow missing: JPEG-sized random blobs instead of JPEGs (stdlib corpus)", file=sys.stderr)
            stdlib_corpus(root, args.samples)
        open(root + ".complete", "w").close()
    return root, name


def text_corpus(args):
    """bench.py's cached JSONL text; where the machine has less text than asked, the text
    found, repeated (with a note under the table)."""
    base = os.path.join(args.corpus_cache, f"text-v1-{args.text_mb:g}")
    for path in (base + ".jsonl", base + "-repeated.jsonl"):
        if os.path.exists(path + ".complete"):
            return path
    path = base + ".jsonl"
    print(f"generating {args.text_mb:g} MB of JSONL text in {path} (once; cached)", file=sys.stderr)
    made = subprocess.run([sys.executable, os.path.join(HERE, "make_text_corpus.py"), path, str(args.text_mb)])
    if made.returncode != 0:
        found, path, limit, copy = path, base + "-repeated.jsonl", args.text_mb * 1e6, 1
        if not os.path.getsize(found):
            sys.exit("no text found for the tokenize corpus")
        with open(path, "wb") as f:
            written = 0
            while written < limit:  # streamed: see timed()
                with open(found, "rb") as lines:
                    for line in lines:
                        if copy > 1:
                            doc = json.loads(line)
                            doc["id"] = f"{doc['id']}#{copy}"
                            line = (json.dumps(doc, ensure_ascii=False) + "\n").encode()
                        written += f.write(line)
                        if written >= limit:
                            break
                copy += 1
        os.remove(found)
    open(path + ".complete", "w").close()
    return path


WRITE_RANDOM = """
import os, sys
with open(sys.argv[1], "wb") as f:
    left = int(sys.argv[2])
    while left:
        left -= f.write(os.urandom(min(left, 64 << 20)))
"""


def random_sets(args, bin_, needed):
    """The verify inputs, random bytes from os.urandom in blocks (written by a child: see
    timed()), each set with its manifest; kept in the work directory while it exists."""
    total = args.big_mib * MIB
    sets = {"verify-4": (4, total // 8), "verify-16": (16, total // 32), "verify-big": (1, total)}
    out = {}
    for key, (count, size) in sets.items():
        if key not in needed:
            continue
        d = os.path.join(args.work, f"files-{key}-{size}")
        if not os.path.exists(d + ".complete"):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            for i in range(count):
                subprocess.run([sys.executable, "-c", WRITE_RANDOM, os.path.join(d, f"part-{i:05d}.bin"), str(size)],
                               check=True)
            subprocess.run([bin_, "manifest", d, "--quiet"], check=True)
            open(d + ".complete", "w").close()
        paths = sorted(glob.glob(os.path.join(d, "*.bin")))
        with open(d + ".list", "wb") as f:
            f.write(b"\0".join(map(os.fsencode, paths)))
        out[key] = (d, count, size, d + ".list")
    return out


def rank_file(args):
    """r50k_base.tiktoken from the tiktoken-rs crate shardsmith builds with (Cargo.lock's
    version, in cargo's registry), unless --rank-file names one."""
    if args.rank_file:
        return args.rank_file
    lock = os.path.join(REPO, "Cargo.lock")
    if not os.path.exists(lock):
        return None
    with open(lock) as f:
        found = re.search(r'name = "tiktoken-rs"\nversion = "([^"]+)"', f.read())
    cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    hits = found and glob.glob(os.path.join(cargo_home, "registry", "src", "*", f"tiktoken-rs-{found[1]}",
                                            "assets", "r50k_base.tiktoken"))
    return hits[0] if hits else None


def probe(python, code):
    if not python or not os.path.exists(python):
        return f"no Python at {python}"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs-list", default=",".join(map(str, default_jobs(cores()))),
                    help="-j values (default: the powers of two up to the cores, and the core count)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds; each cell is the best")
    ap.add_argument("--samples", type=int, default=30000, help="image corpus (make_corpus.py)")
    ap.add_argument("--text-mb", type=float, default=200, help="JSONL text (make_text_corpus.py)")
    ap.add_argument("--big-mib", type=int, default=2048,
                    help="the one big file; the sets of 4 and 16 files hold half as much each")
    ap.add_argument("--what", default="pack,tokenize,verify,manifest", help=f"rows: {', '.join(ROWS)}, or their first word")
    ap.add_argument("--bin", default=os.path.join(REPO, "target", "release", "shardsmith"))
    ap.add_argument("--tiktoken-python", default=sys.executable, help="a Python with tiktoken and numpy")
    ap.add_argument("--gigatoken-python", default=sys.executable, help="a Python with gigatoken 0.10.0")
    ap.add_argument("--rank-file", help="r50k_base.tiktoken for the anchors (default: cargo's copy of tiktoken-rs's)")
    ap.add_argument("--work", default=os.path.join(REPO, "target", "bench-scale"), help="removed at the end")
    ap.add_argument("--results", default=os.path.join(REPO, "target", "bench-scale.json"), help="every run, as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (outputs, random files)")
    ap.add_argument("--corpus-cache", default=os.path.expanduser("~/.cache/shardsmith/bench"))
    args = ap.parse_args()
    jobs = [int(j) for j in args.jobs_list.split(",")]
    top = max(jobs)
    wanted = args.what.split(",")
    rows = [r for r in ROWS if any(r == w or r.startswith(w + "-") for w in wanted)]
    if not rows:
        sys.exit(f"--what {args.what}: no row; rows: {', '.join(ROWS)} (or their first word)")
    bin_ = os.path.abspath(args.bin)
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.corpus_cache, exist_ok=True)
    notes, inputs = [], []

    corpus = text = file_list = None
    if any(r.startswith("pack") for r in rows):
        corpus, corpus_name = image_corpus(args)
        file_list, count, corpus_bytes = os.path.join(args.work, "corpus-files"), 0, 0
        with open(file_list, "wb") as f:
            for d, dirs, names in os.walk(corpus):
                dirs.sort()
                for name in sorted(names):
                    path = os.path.join(d, name)
                    f.write(os.fsencode(path) + b"\0")
                    count, corpus_bytes = count + 1, corpus_bytes + os.path.getsize(path)
        inputs.append(f"{corpus_name}: {count} files, {corpus_bytes / 1e6:.0f} MB")
    if "tokenize" in rows:
        text = text_corpus(args)
        if text.endswith("-repeated.jsonl"):
            notes.append(f"the machine had less text than {args.text_mb:g} MB: {os.path.basename(text)} repeats it")
        inputs.append(f"{os.path.basename(text)}: {os.path.getsize(text) / 1e6:.0f} MB")
    needed = {r for r in rows if r.startswith("verify")} | ({"verify-big"} if "manifest-big" in rows else set())
    sets = random_sets(args, bin_, needed)
    for key, (_, count, size, _) in sets.items():
        inputs.append(f"{count} x {size / MIB:.0f} MiB of random bytes")
    if "verify-big" in sets and args.big_mib < 1024:
        notes.append("the big file is under 1 GiB, the manifest's chunk threshold: no chunk digests")

    def command(row, j, out):
        head = [bin_, "-j", str(j), "--quiet"]
        return {
            "pack-wds": head + ["pack", corpus, out, "--format", "webdataset", "--shard-size", "64MiB"],
            "pack-mds": head + ["pack", corpus, out, "--format", "mds", "--hashes", "sha1", "--shard-size", "64MiB"],
            "pack-parquet": head + ["pack", corpus, out, "--format", "parquet", "--compression", "snappy",
                                    "--row-group-size", "4096", "--shard-size", "64MiB"],
            "tokenize": head + ["tokenize", text or "", out, "-t", "r50k_base", "--format", "nanogpt",
                                "--shard-tokens", "none"],
            "verify-4": head + ["verify", sets.get("verify-4", [""])[0]],
            "verify-16": head + ["verify", sets.get("verify-16", [""])[0]],
            "verify-big": head + ["verify", sets.get("verify-big", [""])[0]],
            "manifest-big": head + ["manifest", sets.get("verify-big", [""])[0], "--output",
                                    os.path.join(out, "manifest.json")],
        }[row]

    # Anchors: name -> (rows it stands beside, a function timing it once).
    anchors = {}
    if corpus:
        tar = os.path.join(args.work, "anchor.tar")
        anchors["tar cf"] = ([r for r in rows if r.startswith("pack")], lambda: plain(timed(
            ["tar", "cf", fresh(tar), "-C", corpus, "."])))
        anchors[f"{top} cats"] = (anchors["tar cf"][0], lambda: over(
            file_list, ["xargs", "-0", "-P", str(top), "-n", "256", "cat"]))
    for key, (_, count, _, listed) in sets.items():
        beside = [r for r in rows if r == key or (key == "verify-big" and r == "manifest-big")]
        anchors[f"sha256sum {key}"] = (beside, lambda listed=listed: over(
            listed, ["xargs", "-0", "-P", str(top), "-n", "1", "sha256sum"]))
    token_files = {}
    if text:
        rank = rank_file(args)
        reference = os.path.join(HERE, "reference.py")
        tik = probe(args.tiktoken_python, "import tiktoken, numpy; print(tiktoken.__version__)")
        giga = probe(args.gigatoken_python, "import gigatoken, awkward, numpy, importlib.metadata as m; "
                                            "print(m.version('gigatoken'))")
        if not rank:
            notes.append("tiktoken and gigatoken skipped: no r50k_base.tiktoken (pass --rank-file)")
        if rank and tik and not tik.startswith("no Python"):
            cache = os.path.join(args.work, "tiktoken-cache")
            subprocess.run([args.tiktoken_python, reference, "tiktoken-cache", cache, rank], check=True,
                           capture_output=True)
            env = dict(os.environ, TIKTOKEN_CACHE_DIR=cache, HTTP_PROXY="http://127.0.0.1:9",
                       HTTPS_PROXY="http://127.0.0.1:9")
            token_files["tiktoken"] = os.path.join(args.work, "tiktoken.bin")
            anchors[f"tiktoken {tik}"] = (["tokenize"], lambda: inner(timed(
                [args.tiktoken_python, reference, "tokenize", text, token_files["tiktoken"], "r50k_base"], env=env)))
        elif rank:
            notes.append(f"tiktoken skipped: not installed in {args.tiktoken_python} ({tik or 'import failed'})")
        if rank and giga and not giga.startswith("no Python"):
            if giga != "0.10.0":
                notes.append(f"gigatoken is {giga}, not the pinned 0.10.0")
            token_files["gigatoken"] = os.path.join(args.work, "gigatoken.bin")
            anchors[f"gigatoken {giga}"] = (["tokenize"], lambda: inner(timed(
                [args.gigatoken_python, reference, "gigatoken", text, token_files["gigatoken"], rank])))
        elif rank:
            notes.append(f"gigatoken skipped: not installed in {args.gigatoken_python} ({giga or 'import failed'}; "
                         "tests/interop/setup_env.sh bench makes it)")

    # Warm the page cache (not with `tar cf /dev/null`: GNU tar reads nothing for it).
    for listed in [file_list] * bool(corpus) + [s[3] for s in sets.values()]:
        over(listed, ["xargs", "-0", "cat"])
    if text:
        subprocess.run(["cat", text], stdout=subprocess.DEVNULL, check=True)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    version = [" ".join(v.split()) for v in
               subprocess.run([bin_, "--version"], capture_output=True, text=True).stdout.splitlines()]
    print(f"{cores()} cores ({cpu}), {platform.libc_ver()[0]} {platform.libc_ver()[1]}; "
          f"{' '.join(version[:2])}; -j {args.jobs_list}; best of {args.repeat}, interleaved; "
          f"{'; '.join(inputs)}", file=sys.stderr)

    times = {(r, j): [] for r in rows for j in jobs}
    rss = {(r, j): 0.0 for r in rows for j in jobs}
    roots = {(r, j): set() for r in rows for j in jobs}
    anchor_times = {a: [] for a in anchors}
    for round_ in range(args.repeat):
        order = jobs if round_ % 2 == 0 else jobs[::-1]
        for row in rows:
            for j in order:
                out = os.path.join(args.work, f"out-{row}")
                shutil.rmtree(out, ignore_errors=True)
                if row == "manifest-big":
                    os.makedirs(out)
                seconds, peak, _ = timed(command(row, j, out))
                times[row, j].append(seconds)
                rss[row, j] = max(rss[row, j], peak)
                if os.path.exists(os.path.join(out, "manifest.json")):
                    with open(os.path.join(out, "manifest.json")) as f:
                        roots[row, j].add(json.load(f).get("root_sha256"))
                if row == "tokenize" and j == top:
                    shutil.copy(os.path.join(out, "tokens_000000.bin"), os.path.join(args.work, "shardsmith.bin"))
            for name, (beside, run) in anchors.items():
                if beside and beside[0] == row:
                    anchor_times[name].append(run())

    labels = {"pack-wds": "pack → WebDataset", "pack-mds": "pack → MDS", "pack-parquet": "pack → Parquet",
              "tokenize": "tokenize, GPT-2"}
    for key, (_, count, size, _) in sets.items():
        labels[key] = f"verify, {count} files of {size / MIB:.0f} MiB" if count > 1 else \
            f"verify, one {size / MIB:.0f} MiB file + manifest"
    labels["manifest-big"] = "manifest of that file"
    head = ["work", *[f"-j {j}" for j in jobs], f"speed-up at {top}"]
    if 1 in jobs and 2 in jobs:
        head.append("-j 2 / -j 1 (bar ≤ 0.55)")
    head += [f"peak RSS -j {min(jobs)} / -j {top}", "anchors, same run (best)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        best = {j: min(times[row, j]) for j in jobs}
        cells = [labels[row], *[f"{best[j]:.2f} s" for j in jobs], f"{best[min(jobs)] / best[top]:.1f}×"]
        if 1 in jobs and 2 in jobs:
            cells.append(f"{best[2] / best[1]:.2f}")
        cells.append(f"{rss[row, min(jobs)]:.0f} / {rss[row, top]:.0f} MiB")
        cells.append("; ".join(anchor_cell(name, anchor_times[name], top) for name, (beside, _) in anchors.items()
                               if row in beside) or "none (see below)")
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))

    checks = []
    for row in rows:
        found = set().union(*(roots[row, j] for j in jobs))
        if row.startswith(("pack", "tokenize", "manifest")):
            checks.append(f"{row}: " + ("same root digest at every -j" if len(found) == 1 else
                                        f"ROOTS DIFFER: {sorted(map(str, found))}" if found else "NO MANIFEST"))
    ours = os.path.join(args.work, "shardsmith.bin")
    for tool, path in token_files.items():
        if os.path.exists(path) and os.path.exists(ours):
            a, b = os.path.getsize(ours) // 2, os.path.getsize(path) // 2
            same = a == b and filecmp.cmp(ours, path, shallow=False)
            checks.append(f"{tool} tokens vs shardsmith's: {'IDENTICAL' if same else 'DIFFER'} "
                          f"({b:,} vs {a:,} tokens{'' if a == b else ', COUNTS DIFFER'})")
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if any(v <= floor + 1 for v in rss.values()):
        notes.append(f"a peak RSS at or under {floor:.0f} MiB is this script's own: a child's maxrss "
                     "counts its parent's at the fork")
    print("\n".join(checks + notes))
    with open(args.results, "w") as f:
        json.dump({"cores": cores(), "cpu": cpu, "jobs": jobs, "inputs": inputs,
                   "runs": {f"{r} -j {j}": {"seconds": times[r, j], "peak_rss_mib": rss[r, j]} for r, j in times},
                   "anchors": {a: t for a, t in anchor_times.items()}, "checks": checks, "notes": notes}, f, indent=1)
    print(f"(all runs: {args.results})", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


def fresh(path):
    if os.path.exists(path):
        os.remove(path)
    return path


def plain(result):
    """An anchor's (seconds, peak RSS MiB, details)."""
    return result[0], result[1], {}


def over(listed, cmd):
    """cmd (xargs -0 ...) over the NUL-separated paths in the file `listed`; its output
    thrown away."""
    with open(listed, "rb") as f:
        return plain(timed(cmd, stdin=f, discard=True))


def inner(result):
    """A reference.py run: the time it reports (import excluded), the process's RSS, the
    rest of its report."""
    seconds, peak, stdout = result
    report = json.loads(stdout)
    return report.pop("seconds"), peak, report


def anchor_cell(name, runs, top):
    seconds = min(r[0] for r in runs)
    extra = ""
    encode = [r[2]["encode_seconds"] for r in runs if "encode_seconds" in r[2]]
    if encode:
        extra = f" (encode_files alone {min(encode):.2f} s)"
    if name.startswith("tiktoken"):
        name = f"{name} on {os.cpu_count()} threads"
    if name.startswith("sha256sum"):
        name = f"xargs -P {top} sha256sum"
    return f"{name} {seconds:.2f} s{extra}"


if __name__ == "__main__":
    main()
