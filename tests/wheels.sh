#!/usr/bin/env bash
# The wheels, as a user gets them. Builds the `shardsmith` wheel (the binary, maturin
# "bin" bindings) and the `shardsmith-api` wheel (the Python API, PyO3 abi3) with maturin,
# installs both into a fresh venv without the network, and runs from there:
#   - the CLI found on the venv's PATH: --version, a pack of samples/raw (its shards and
#     manifest byte-identical to those of the cargo-built binary), a clean verify (exit 0)
#     and a verify of a damaged copy (exit 1, naming the shard);
#   - the ```python examples that import shardsmith, of every page (README.md, cli/python/README.md,
#     ...), in a directory where `shards/` is that pack;
#   - the API's pytest suite (cli/python/tests), with SHARDSMITH_BIN naming the venv's CLI
#     so the API's findings and manifests are compared with the CLI's.
# maturin and pytest come pinned from the `wheels` group of tests/interop/uv.lock (cached).
# The wheels reuse the release build of target/ (same profile and features, which
# tests/build/shared_features.py checks first), so after `cargo test --release` only pyo3,
# the binding crate and the binary's final link are built.
#
#   usage: tests/wheels.sh          (run by tests/run_all.sh after the cargo tests)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
tools=$(tests/interop/setup_env.sh wheels)
work=$(mktemp -d "${TMPDIR:-/tmp}/shardsmith-wheels.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
    echo "wheels: FAILED: $*" >&2
    exit 1
}

echo "== wheels: building shardsmith and shardsmith-api"
# maturin builds each crate alone: with the workspace's features it links what the tests
# built, instead of building arrow, parquet and our crates a second time.
tests/build/shared_features.py || fail "a wheel would not reuse the test build (see above)"
for project in cli cli/python; do
    start=$SECONDS
    "$tools/bin/maturin" build --release --locked --quiet -m "$project/Cargo.toml" -o "$work/dist" >&2
    echo "   $project built in $((SECONDS - start)) s"
done
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
ls "$work/dist/shardsmith-$version-"*.whl >/dev/null 2>&1 ||
    fail "no shardsmith-$version wheel in $work/dist: $(ls "$work/dist")"
ls "$work/dist/shardsmith_api-$version-cp39-abi3-"*.whl >/dev/null 2>&1 ||
    fail "no abi3 shardsmith_api-$version wheel in $work/dist: $(ls "$work/dist")"
ls "$work/dist" >&2
# PyPI's page is the wheel's description: cli/PYPI.md, whose links are absolute (the
# README's relative links would not resolve there).
"$python" - "$work/dist"/shardsmith-"$version"-*.whl cli/PYPI.md <<'PY' || fail "the wheel's description is not cli/PYPI.md"
import sys, zipfile

wheel = zipfile.ZipFile(sys.argv[1])
metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
text = wheel.read(metadata).decode()
assert "Description-Content-Type: text/markdown" in text, text[:2000]
assert open(sys.argv[2]).read().strip() in text, "cli/PYPI.md not in METADATA"
assert "](cli/" not in text and "](formats/" not in text, "a relative link in the description"
PY

echo "== wheels: a fresh venv, installed offline"
"$python" -m venv "$work/venv"
venv="$work/venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-index \
    --find-links "$work/dist" --find-links "$tools/wheelhouse" \
    shardsmith shardsmith-api pytest
export PATH="$venv/bin:$PATH"
[ "$(command -v shardsmith)" = "$venv/bin/shardsmith" ] ||
    fail "shardsmith on PATH is $(command -v shardsmith), not the venv's"
shardsmith --version | head -1 | grep -q "^shardsmith $version" ||
    fail "--version says: $(shardsmith --version | head -1)"
"$venv/bin/python" - "$version" <<'PY'
import sys
import shardsmith

assert shardsmith.__version__ == sys.argv[1], shardsmith.__version__
assert shardsmith.__file__.startswith(sys.prefix), f"imported from {shardsmith.__file__}"
PY

echo "== wheels: the venv's CLI packs and verifies samples/raw"
shardsmith pack samples/raw "$work/shards" --shard-size 64KiB --quiet
target/release/shardsmith pack samples/raw "$work/reference" --shard-size 64KiB --quiet
diff -r "$work/shards" "$work/reference" >/dev/null ||
    fail "the wheel's pack differs from target/release/shardsmith's"
shardsmith verify "$work/shards" --quiet || fail "verify of the fresh pack exited $?"
cp -r "$work/shards" "$work/damaged"
shard=$(cd "$work/damaged" && ls ./*.tar | head -1)
printf 'X' | dd of="$work/damaged/$shard" bs=1 seek=1000 conv=notrunc status=none
status=0
shardsmith verify "$work/damaged" --json >"$work/damaged.json" || status=$?
[ "$status" = 1 ] || fail "verify of a damaged shard exited $status, not 1"
"$venv/bin/python" - "$work/damaged.json" "${shard#./}" <<'PY' || fail "verify's report: $(cat "$work/damaged.json")"
import json, sys

report = json.load(open(sys.argv[1]))
errors = [f for f in report["findings"] if f["severity"] == "error"]
assert errors and all(f["path"] == sys.argv[2] for f in errors), errors
PY

echo "== wheels: the pages' Python examples, in a directory holding those shards"
# Every .md page of the repository (outside target/ and hidden directories), as
# tests/project/doc_links.rs finds them: the API's examples are on cli/python/README.md.
"$venv/bin/python" - . "$work/readme" <<'PY'
import os, re, sys

pages = []
for top, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "target")
    pages += sorted(os.path.join(top, f) for f in files if f.endswith(".md"))
blocks = []
for page in pages:
    found = re.findall(r"^```python\n(.*?)^```", open(page, encoding="utf-8").read(), re.M | re.S)
    blocks += [(page, b) for b in found if re.search(r"^import shardsmith$", b, re.M)]
assert blocks, "no ```python block of any page imports shardsmith"
os.makedirs(sys.argv[2])
for i, (page, block) in enumerate(blocks):
    name = re.sub(r"[^A-Za-z0-9]+", "_", os.path.relpath(page, sys.argv[1]))
    open(os.path.join(sys.argv[2], f"block{i}-{name}.py"), "w").write(block)
PY
for block in "$work"/readme/block*.py; do
    status=0
    (cd "$work" && "$venv/bin/python" "$block") || status=$?
    [ "$status" = 0 ] || fail "the Python example $(basename "$block") exited $status"
done

echo "== wheels: the Python API (pytest, against the venv's CLI)"
SHARDSMITH_BIN="$venv/bin/shardsmith" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    cli/python/tests
echo "wheels: OK"
