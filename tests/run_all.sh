#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests of the binary, and interop tests
# that read our output with the real Python readers (pinned env, built once and cached
# under $HOME/.cache/shardsmith). Everything is built once, in release mode, and shared
# by the tests and the binary they drive.
#
#   usage: tests/run_all.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(tests/interop/setup_env.sh)
export SHARDSMITH_PYTHON="$venv/bin/python"
cargo test --release --locked --workspace "$@"
