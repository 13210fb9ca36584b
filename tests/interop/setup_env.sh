#!/usr/bin/env bash
# Builds (once) the pinned Python environment of reference tools used by the interop
# tests and the benchmark, and prints its directory. Cached under
# $HOME/.cache/shardsmith/interop-<hash of the requirement files>; re-running is instant.
#
#   usage: tests/interop/setup_env.sh            -> prints the venv directory
#          tests/interop/setup_env.sh signing    -> the model_signing venv (its own pins)
#   then:  "$VENV/bin/python" ...  with PYTHONPATH=tests/interop/torchstub for wids/streaming
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
if [ "${1:-}" = signing ]; then
    key=$(sha256sum < "$here/requirements-signing.txt" | cut -c1-16)
    venv="$HOME/.cache/shardsmith/signing-$key"
    if [ ! -f "$venv/.complete" ]; then
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements-signing.txt" >&2
        "$venv/bin/model_signing" --version >&2
        touch "$venv/.complete"
    fi
    echo "$venv"
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
