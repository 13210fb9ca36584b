#!/usr/bin/env bash
# Builds (once) the pinned Python environment of reference tools used by the interop
# tests and the benchmark, and prints its directory. Cached under
# $HOME/.cache/shardsmith/interop-<hash of the requirement files>; re-running is instant.
#
#   usage: tests/interop/setup_env.sh            -> prints the venv directory
#          tests/interop/setup_env.sh signing    -> the model_signing venv (its own pins)
#          tests/interop/setup_env.sh wheels     -> maturin and pytest (tests/wheels.sh)
#          tests/interop/setup_env.sh images     -> the img2dataset venv (its own pins), for
#                                                   make_images.py, check_images.py, bench images
#          tests/interop/setup_env.sh torch      -> torch, its DCP and safetensors (its own pins),
#                                                   the checkpoint writers and loaders of tests/torch_*
#   then:  "$VENV/bin/python" ...  with PYTHONPATH=tests/interop/torchstub for wids/streaming
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
# A venv of its own for one requirement file: own_venv NAME PIP-FLAGS CHECK-COMMAND
own_venv() {
    local name=$1 flags=$2 check=$3 key venv
    key=$(sha256sum < "$here/requirements-$name.txt" | cut -c1-16)
    venv="$HOME/.cache/shardsmith/$name-$key"
    if [ ! -f "$venv/.complete" ]; then
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv" >&2
        # shellcheck disable=SC2086  # flags is a word list
        "$venv/bin/pip" install --quiet --disable-pip-version-check $flags -r "$here/requirements-$name.txt" >&2
        (cd "$venv" && eval "$check") >&2
        touch "$venv/.complete"
    fi
    echo "$venv"
}
if [ "${1:-}" = signing ]; then
    own_venv signing --no-deps 'bin/model_signing --version'
    exit 0
fi
if [ "${1:-}" = wheels ]; then
    # Also a wheelhouse of pytest and its pins, for the offline install into a fresh venv.
    own_venv wheels --no-deps 'bin/maturin --version && bin/python -m pytest --version &&
        grep -v "^maturin" "$here/requirements-wheels.txt" > wheelhouse.txt &&
        bin/pip download --quiet --disable-pip-version-check --no-deps -d wheelhouse -r wheelhouse.txt'
    exit 0
fi
if [ "${1:-}" = torch ]; then
    # With dependencies (the nvidia-* wheels torch needs to import, even on the CPU).
    own_venv torch "" 'bin/python -c "import torch, torch.distributed.checkpoint, safetensors, numpy, zstandard"'
    exit 0
fi
if [ "${1:-}" = images ]; then
    # With dependencies: every one is pinned in the file, so pip resolves to exactly it.
    own_venv images "" 'NO_ALBUMENTATIONS_UPDATE=1 bin/python -c "import img2dataset.resizer, cv2, skimage.data, webdataset, PIL"'
    exit 0
fi
key=$(cat "$here/requirements.txt" "$here/requirements-nodeps.txt" | sha256sum | cut -c1-16)
venv="${SHARDSMITH_INTEROP_VENV:-$HOME/.cache/shardsmith/interop-$key}"
if [ -f "$venv/.complete" ]; then
    echo "$venv"
    exit 0
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements-nodeps.txt" >&2
"$venv/bin/python" - >&2 <<'PY'
import webdataset, pyarrow, numpy, safetensors, tiktoken, tokenizers, PIL  # noqa: F401
PY
touch "$venv/.complete"
echo "$venv"
