#!/usr/bin/env bash
# Static-binary benchmark: builds the glibc release binary and the static musl one
# (x86_64-unknown-linux-musl), checks the musl one is static and uses mimalloc and SIMD
# JPEG, then runs static.py: the same commands with both binaries, interleaved, as a table.
#   usage: tests/bench/static.sh [--samples 30000] [--text-mb 200] [--verify-mib 1024] [--repeat 3]
#                                [--what pack,parquet,tokenize,verify,images]
#          (also: tests/bench/run.sh static ...)
# Needs the musl target (rustup target add x86_64-unknown-linux-musl, done here) and musl-gcc
# for the C dependencies (Debian/Ubuntu: musl-tools, installed here when run as root).
set -euo pipefail
cd "$(dirname "$0")/../.."
target=x86_64-unknown-linux-musl
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
command -v nasm >/dev/null ||
    echo "warning: nasm not found: libjpeg-turbo is built without SIMD, JPEG decoding is slower" >&2
cargo build --release --locked --quiet -p shardsmith-cli
CC_x86_64_unknown_linux_musl=musl-gcc cargo build --release --locked --quiet --target "$target" -p shardsmith-cli
glibc=target/release/shardsmith
musl=target/$target/release/shardsmith
# Static: `file` says "static-pie linked" (or "statically linked"), ldd finds no libraries.
kind=$(file -b "$musl")
case "$kind" in
    *static*) ;;
    *) echo "error: $musl is not static: $kind" >&2; exit 1 ;;
esac
if ldd "$musl" 2>&1 | grep -q '=>'; then
    echo "error: ldd lists shared libraries for $musl:" >&2
    ldd "$musl" >&2
    exit 1
fi
# mimalloc: the allocator reports its statistics at exit when it is the one in use (musl's
# own malloc would be slow with threads). SIMD JPEG: libjpeg-turbo's AVX2 IDCT is linked in.
for bin in "$glibc" "$musl"; do
    if ! MIMALLOC_SHOW_STATS=1 "$bin" --version 2>&1 >/dev/null | grep -q 'peak commit'; then
        echo "error: $bin does not run on mimalloc (MIMALLOC_SHOW_STATS=1 printed no statistics)" >&2
        exit 1
    fi
    simd="SIMD JPEG"
    if ! grep -q jsimd_idct_islow_avx2 "$bin"; then
        simd="NO SIMD JPEG"
        echo "warning: $bin has no libjpeg-turbo SIMD (jsimd_idct_islow_avx2 not found)" >&2
    fi
done
echo "$musl: $kind; mimalloc in use; $simd" >&2
venv=$(tests/interop/setup_env.sh)
exec "$venv/bin/python" tests/bench/static.py "$@"
