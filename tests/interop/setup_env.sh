#!/usr/bin/env bash
# Makes (once) the Python environment of one dependency group of tests/interop/pyproject.toml
# and prints its directory. Every group is pinned, with hashes, in the one lock
# tests/interop/uv.lock; each gets its own venv (their pins differ), cached under
# $HOME/.cache/shardsmith/GROUP-<hash of the lock and the group>, so re-running is instant.
# uv installs them (pinned below, itself installed from PyPI once): downloads run in
# parallel and land in uv's cache, so making all five takes about two minutes, not six.
#
#   usage: tests/interop/setup_env.sh [GROUP]   -> makes the venv, prints its directory
#            interop (default)  the readers and writers (webdataset, wids, streaming, pyarrow, ...)
#            torch              torch, its DCP and safetensors (tests/torch_*); DALI and
#                               Megatron-Energon (wds2idx, energon: reader indexes)
#            images             img2dataset's resizer and scikit-image (pack --image-size)
#            signing            the model_signing CLI
#            wheels             maturin and pytest, and a wheelhouse of pytest for the offline
#                               install of tests/wheels.sh
#            bench              gigatoken, the benchmark's tokenize anchor (tests/bench/scale.py)
#          tests/interop/setup_env.sh --cached GROUP  -> the directory if made, else exit 1
#          tests/interop/setup_env.sh uv              -> the directory of the pinned uv
#   then:  "$VENV/bin/python" ...  with PYTHONPATH=tests/interop/torchstub for wids/streaming
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
uv_version=0.13.9
cache=$HOME/.cache/shardsmith

# uv's directory, installed the first time (under a lock: tests/setup.sh makes the
# groups at the same time).
uv_dir() {
    local dir=$cache/uv-$uv_version
    mkdir -p "$cache"
    (
        flock 9
        if [ ! -f "$dir/.complete" ]; then
            rm -rf "$dir"
            "$python" -m venv "$dir" >&2
            "$dir/bin/pip" install --quiet --disable-pip-version-check "uv==$uv_version" >&2
            touch "$dir/.complete"
        fi
    ) 9>"$cache/.uv-$uv_version.lock"
    echo "$dir"
}

# What a group's venv is checked with once made (in the venv's directory).
check_of() {
    case $1 in
    interop) echo 'bin/python -c "import webdataset, pyarrow, numpy, safetensors, tiktoken, tokenizers, PIL"' ;;
    torch) echo 'bin/python -c "import torch, torch.distributed.checkpoint, safetensors, numpy, zstandard, nvidia.dali, megatron.energon, datasets, litdata" && test -x bin/wds2idx && test -x bin/energon' ;;
    images) echo 'NO_ALBUMENTATIONS_UPDATE=1 bin/python -c "import img2dataset.resizer, cv2, skimage.data, webdataset, PIL"' ;;
    signing) echo 'bin/model_signing --version' ;;
    wheels) echo 'bin/maturin --version && bin/python -m pytest --version' ;;
    bench) echo 'bin/python -c "import gigatoken, awkward, numpy"' ;;
    *) return 1 ;;
    esac
}

venv_of() {
    local key
    key=$(cat "$here/uv.lock" "$here/pyproject.toml" - <<<"$1" | sha256sum | cut -c1-16)
    if [ "$1" = interop ] && [ -n "${SHARDSMITH_INTEROP_VENV:-}" ]; then
        echo "$SHARDSMITH_INTEROP_VENV"
    else
        echo "$cache/$1-$key"
    fi
}

case ${1:-interop} in
uv)
    uv_dir
    exit 0
    ;;
--cached)
    venv=$(venv_of "${2:?usage: $0 --cached GROUP}")
    [ -f "$venv/.complete" ] && echo "$venv"
    exit $?
    ;;
esac
group=${1:-interop}
check=$(check_of "$group") || { echo "error: no group \`$group\` in $here/pyproject.toml" >&2; exit 2; }
venv=$(venv_of "$group")
if [ ! -f "$venv/.complete" ]; then
    uv=$(uv_dir)/bin/uv
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv" >&2
    # The group's pins, with their hashes, as the lock has them; --frozen: the lock is
    # used as committed, never re-resolved.
    "$uv" export --quiet --frozen --project "$here" --only-group "$group" --no-emit-project \
        --format requirements-txt -o "$venv/pins.txt" >&2
    "$uv" pip install --quiet --python "$venv/bin/python" --require-hashes --no-deps \
        -r "$venv/pins.txt" >&2
    (cd "$venv" && eval "$check") >&2
    if [ "$group" = wheels ]; then
        # pytest and its pins as wheel files: tests/wheels.sh installs them into a fresh
        # venv with --no-index.
        "$uv" export --quiet --frozen --project "$here" --only-group wheels --no-emit-project \
            --no-emit-package maturin --format requirements-txt -o "$venv/wheelhouse.txt" >&2
        "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
            --require-hashes -d "$venv/wheelhouse" -r "$venv/wheelhouse.txt" >&2
    fi
    touch "$venv/.complete"
fi
echo "$venv"
