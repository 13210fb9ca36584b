#!/usr/bin/env bash
# Release artifacts in dist/ (gitignored):
#   shardsmith-<version>-x86_64-unknown-linux-musl         the static binary: runs on any x86_64 Linux
#   shardsmith-<version>-x86_64-unknown-linux-musl.sha256  its SHA-256, in sha256sum's format
#   shardsmith-<version>-py3-none-<tags>.whl               when cli/pyproject.toml exists: the same
#                                                          static binary as a maturin "bin" wheel,
#                                                          tagged manylinux2014 AND musllinux_1_2, so
#                                                          one wheel installs on glibc and musl systems
#   shardsmith_api-<version>-cp39-abi3-<tag>.whl          the Python API for this machine's libc
# The version is the CLI crate's (the workspace's), read through cargo metadata.
#   usage: .ci/release.sh
# Needs: the x86_64-unknown-linux-musl target (added here), musl-gcc for the C dependencies
# (Debian/Ubuntu musl-tools; installed here when root), nasm for SIMD JPEG; maturin 1.16.0
# is installed once into a venv under ~/.cache/shardsmith.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-linux-musl
maturin_version=1.16.0
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
if ! command -v musl-gcc >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq musl-tools >/dev/null
    else
        echo "error: musl-gcc not found; install musl-tools (Debian/Ubuntu: sudo apt-get install musl-tools)" >&2
        exit 1
    fi
fi
if ! command -v nasm >/dev/null; then
    echo "error: nasm not found: the release would decode JPEG without SIMD (apt-get install nasm)" >&2
    exit 1
fi
# The C dependencies (mimalloc, zstd, libjpeg-turbo, ring's assembly) are compiled against musl.
export CC_x86_64_unknown_linux_musl=musl-gcc
version=$(cargo metadata --format-version 1 --no-deps --locked |
    python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "shardsmith-cli"))')
name=shardsmith-$version-$target
# --version names the commit; a release comes from a clean tree, or says "-modified".
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    echo "warning: the work tree has changes: shardsmith --version will name the commit as -modified" >&2
fi
mkdir -p dist
rm -f "dist/$name" "dist/$name.sha256" dist/shardsmith-"$version"-*.whl

echo "== static binary ($target)"
cargo build --release --locked --target "$target" -p shardsmith-cli
bin=target/$target/release/shardsmith
case "$(file -b "$bin")" in
    *static*) ;;
    *) echo "error: $bin is not statically linked: $(file -b "$bin")" >&2; exit 1 ;;
esac
# The allocator must be mimalloc (musl's malloc is slow with threads): it prints its
# statistics at exit when asked.
MIMALLOC_SHOW_STATS=1 "$bin" --version 2>&1 >/dev/null | grep -q 'peak commit' ||
    { echo "error: $bin does not run on mimalloc" >&2; exit 1; }
grep -q jsimd_idct_islow_avx2 "$bin" ||
    { echo "error: $bin has no libjpeg-turbo SIMD" >&2; exit 1; }
cp "$bin" "dist/$name"
(cd dist && sha256sum "$name" >"$name.sha256")
"dist/$name" --version | head -3

if [ ! -f cli/pyproject.toml ]; then
    echo "== wheel skipped: no cli/pyproject.toml"
    ls -l dist
    exit 0
fi
echo "== wheel (maturin $maturin_version, $target, manylinux2014 + musllinux_1_2)"
venv=$HOME/.cache/shardsmith/maturin-$maturin_version
if [ ! -x "$venv/bin/maturin" ] || [ "$("$venv/bin/maturin" --version)" != "maturin $maturin_version" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$maturin_version"
fi
# The binary is static, so it satisfies manylinux (no glibc symbol, no shared library) as
# well as musllinux: one wheel, both tags, pip takes it on either libc.
"$venv/bin/maturin" build --release --locked --target "$target" -m cli/Cargo.toml -o dist \
    --compatibility manylinux2014 musllinux_1_2
wheel=$(ls dist/shardsmith-"$version"-*.whl)
# The wheel must carry the very binary released beside it.
python3 - "$wheel" "dist/$name" <<'EOF'
import hashlib, sys, zipfile
wheel, binary = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    scripts = [n for n in z.namelist() if n.endswith(".data/scripts/shardsmith")]
    if len(scripts) != 1:
        sys.exit(f"error: {wheel} holds {scripts}, not one shardsmith script")
    inside = hashlib.sha256(z.read(scripts[0])).hexdigest()
outside = hashlib.sha256(open(binary, "rb").read()).hexdigest()
if inside != outside:
    sys.exit(f"error: the wheel's binary ({inside}) is not {binary} ({outside})")
print(f"{wheel}: holds {binary} (sha256 {outside})")
EOF
# Installs and runs on this machine (glibc or musl) from the wheel alone.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
python3 -m venv "$check/venv"
"$check/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
"$check/venv/bin/shardsmith" --version | head -1
(cd dist && sha256sum "$(basename "$wheel")" >"$(basename "$wheel").sha256")

# The Python API (cli/python): an extension module is loaded by the interpreter, so it
# is built for this machine's libc, once for every CPython >= 3.9 (abi3); maturin tags it
# with the oldest manylinux its glibc symbols allow.
echo "== shardsmith-api wheel (abi3, host target)"
rm -f dist/shardsmith_api-"$version"-*.whl
"$venv/bin/maturin" build --release --locked -m cli/python/Cargo.toml -o dist
api=$(ls dist/shardsmith_api-"$version"-cp39-abi3-*.whl)
"$check/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$api"
"$check/venv/bin/python" -c 'import shardsmith; print("shardsmith-api", shardsmith.__version__)'
(cd dist && sha256sum "$(basename "$api")" >"$(basename "$api").sha256")
ls -l dist
