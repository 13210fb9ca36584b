#!/usr/bin/env bash
# Benchmark: builds shardsmith (release), sets up the pinned reference env, generates
# the corpora once (cached under ~/.cache/shardsmith/bench), then runs bench.py.
#   usage: tests/bench/run.sh [--samples 30000] [--text-mb 200] [--repeat 3] [--what pack,tokenize]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked --quiet
venv=$(tests/interop/setup_env.sh)
exec "$venv/bin/python" tests/bench/bench.py "$@"
