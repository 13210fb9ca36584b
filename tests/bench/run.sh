#!/usr/bin/env bash
# Benchmark: builds shardsmith (release), sets up the pinned reference env, generates
# the corpora once (cached under ~/.cache/shardsmith/bench), then runs bench.py.
#   usage: tests/bench/run.sh [--samples 30000] [--text-mb 200] [--repeat 3] [--what pack,tokenize]
#          tests/bench/run.sh checkpoints [--gib 2] [--files 8] [--repeat 3]   (checkpoints.py)
#          tests/bench/run.sh signing [--gib 2] [--files 8] [--repeat 3]       (signing.py)
#          tests/bench/run.sh diff [--gib 2] [--repeat 3] [--work DIR] [--keep] (diff.py: vs torch.load)
#          tests/bench/run.sh objects [--samples 30000] [--repeat 3]           (objects.py: S3)
#          tests/bench/run.sh split [--samples 30000] [--text-mb 100] [--repeat 3] (split.py: tasks)
#          tests/bench/run.sh images [--images 5000] [--repeat 3] [--size 256]   (images.py: img2dataset)
#          tests/bench/run.sh convert [--samples 30000] [--repeat 3] [--cat-shards 1000] (convert.py)
#          tests/bench/run.sh api [--gib 1] [--repeat 7]                  (api.py: shardsmith.verify() vs CLI)
#          tests/bench/run.sh indexes [--samples 30000] [--repeat 3] [--json FILE] (indexes.py: readers' indexes)
#          tests/bench/run.sh formats [--samples 30000] [--repeat 3] [--json FILE] (formats.py: hf, litdata, --dedup)
#          tests/bench/run.sh static [--samples 30000] [--text-mb 200] [--repeat 3] (static.sh: musl vs glibc)
#          tests/bench/run.sh scale [--jobs-list 1,2,4] [--repeat 2] [--what pack,tokenize,verify,manifest]
#                             [--samples 30000] [--text-mb 200] [--big-mib 2048] [--bin PATH]
#                             (scale.py: wall time at each -j; with --bin nothing is built)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = static ]; then
    shift
    exec tests/bench/static.sh "$@"
fi
if [ "${1:-}" = scale ]; then
    shift
    case " $* " in
    *" --bin "* | *" --bin="*) ;;
    *) cargo build --release --locked --quiet ;;
    esac
    venv=$(tests/interop/setup_env.sh)
    # gigatoken's own env (its pins differ from the interop env's); without it the anchor
    # is skipped, and scale.py says so.
    gigatoken=$(tests/interop/setup_env.sh bench) || gigatoken=/nonexistent
    exec "$venv/bin/python" tests/bench/scale.py --tiktoken-python "$venv/bin/python" \
        --gigatoken-python "$gigatoken/bin/python" "$@"
fi
command -v nasm >/dev/null ||
    echo "warning: nasm not found: libjpeg-turbo is built without SIMD, JPEG decoding is slower" >&2
cargo build --release --locked --quiet
if [ "${1:-}" = checkpoints ]; then
    shift
    exec python3 tests/bench/checkpoints.py "$@"
fi
if [ "${1:-}" = api ]; then
    shift
    exec python3 tests/bench/api.py "$@"
fi
if [ "${1:-}" = diff ]; then
    shift
    exec python3 tests/bench/diff.py "$@"
fi
if [ "${1:-}" = signing ]; then
    shift
    signing=$(tests/interop/setup_env.sh signing)
    MODEL_SIGNING_PYTHON="$signing/bin/python" exec python3 tests/bench/signing.py "$@"
fi
if [ "${1:-}" = images ]; then
    shift
    images=$(tests/interop/setup_env.sh images)
    exec "$images/bin/python" tests/bench/images.py "$@"
fi
if [ "${1:-}" = formats ]; then
    shift
    torch=$(tests/interop/setup_env.sh torch)
    exec "$torch/bin/python" tests/bench/formats.py "$@"
fi
venv=$(tests/interop/setup_env.sh)
if [ "${1:-}" = split ]; then
    shift
    exec "$venv/bin/python" tests/bench/split.py "$@"
fi
if [ "${1:-}" = convert ]; then
    shift
    exec "$venv/bin/python" tests/bench/convert.py "$@"
fi
if [ "${1:-}" = indexes ]; then
    shift
    torch=$(tests/interop/setup_env.sh torch)
    exec "$venv/bin/python" tests/bench/indexes.py --torch-venv "$torch" "$@"
fi
if [ "${1:-}" = objects ]; then
    shift
    exec "$venv/bin/python" tests/bench/objects.py "$@"
fi
exec "$venv/bin/python" tests/bench/bench.py "$@"
