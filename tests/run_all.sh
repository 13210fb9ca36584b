#!/usr/bin/env bash
# The whole test suite: clippy, unit tests, integration tests of the binary (the ones a
# plain `cargo test` ignores for their cost too), interop tests that read our output with
# the real Python readers, the wheels, and the fuzz targets. Everything is built once, in release mode, and shared by the tests, the
# binary they drive and the wheels; clippy lints our crates in that same build.
#
#   usage: tests/run_all.sh [extra cargo test args]     e.g. -p shardsmith-cli -- pack::
#
# Prints "== STAGE" lines with the seconds each stage took (tests/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
stage() { echo "== $* (at ${SECONDS} s)"; }

# The cargo args before `--` (which packages and targets to build) also pick what the
# build stage compiles.
build_args=()
for arg in "$@"; do
    [ "$arg" = -- ] && break
    build_args+=("$arg")
done
# Every test runs here, the ones a plain `cargo test` leaves out for their cost (an env,
# a server, root, Slurm: `#[ignore = "needs …"]`, tests/project/costs.rs) included: the set-up
# below provides what they need, and under CI a test without it fails. The libtest
# option goes after the caller's `--`, or after one of ours.
test_args=("$@")
case " $* " in
    *" --ignored "* | *" --include-ignored "*) ;;
    *" -- "*) test_args+=(--include-ignored) ;;
    *) test_args+=(-- --include-ignored) ;;
esac

# Clippy in the build itself: our crates (cargo's workspace members, and only those) are
# compiled by clippy-driver, which is rustc plus clippy's lints, and warnings are
# errors. This is what `cargo clippy --all-targets -- -D warnings` does, except that
# cargo clippy stops after checking, so its build could not be shared with the tests.
# cargo's fingerprints include the wrapper: a later plain `cargo build --release`
# recompiles our crates (not the dependencies).
driver="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$driver" ] || { echo "error: clippy is missing: rustup component add clippy" >&2; exit 2; }
export RUSTC_WORKSPACE_WRAPPER="$driver"
# How cargo clippy hands `-- -D warnings` to clippy-driver.
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# A lint stage that cannot fail proves nothing: first a crate with a clippy warning must
# fail to build this way.
probe=$(mktemp -d "${TMPDIR:-/tmp}/shardsmith-clippy-probe.XXXXXX")
mkdir "$probe/src"
printf '[package]\nname = "probe"\nversion = "0.0.0"\nedition = "2021"\n' >"$probe/Cargo.toml"
printf 'fn main() {\n    let v = vec![1];\n    println!("{}", v.len() == 0);\n}\n' >"$probe/src/main.rs"
if cargo build --quiet --manifest-path "$probe/Cargo.toml" --target-dir "$probe/target" 2>"$probe/log"; then
    echo "error: clippy-driver as the workspace wrapper did not refuse clippy::len_zero" >&2
    exit 2
fi
grep -q "clippy::len_zero" "$probe/log" || { cat "$probe/log" >&2; exit 2; }
rm -rf "$probe"

# Set-up (pinned Python envs, servers, Slurm, cargo-fuzz, actionlint; cached under
# $HOME/.cache/shardsmith) mostly waits on the network: it runs while the tests compile.
stage "set-up (in the background) and the release build of every test, with clippy"
setup_env=$(mktemp "${TMPDIR:-/tmp}/shardsmith-setup-env.XXXXXX")
trap 'rm -f "$setup_env"' EXIT
tests/setup.sh >"$setup_env" &
setup=$!
build=0
cargo test --release --locked --workspace --no-run "${build_args[@]}" || build=$?
stage "build done; waiting for the set-up"
wait "$setup" || { echo "error: the set-up failed (above)" >&2; exit 1; }
[ "$build" = 0 ] || { echo "error: the build failed (above)" >&2; exit 1; }
# shellcheck disable=SC1090  # written by tests/setup.sh
source "$setup_env"
# Opt-in: regenerate the committed checkpoint fixtures with the same torch (see
# tests/fixtures/checkpoints/README.md). The tests below then run on them.
if [ "${SHARDSMITH_CHECKPOINT_REGEN:-}" = 1 ]; then
    "$SHARDSMITH_TORCH_PYTHON" tests/fixtures/checkpoints/generate.py
fi

# The fuzz targets' build (nightly, instrumented: its own build of every dependency, about
# 12 minutes of both cores) starts now at the lowest priority: it takes the CPU the tests
# leave idle while they wait on Python, servers and timeouts, and then the wheels'.
fuzz_log=$(mktemp "${TMPDIR:-/tmp}/shardsmith-fuzz-build.XXXXXX")
# setsid: its own process group, so a failing suite stops it with all of its compilers.
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS setsid nice -n 19 tests/fuzz/run.sh --build >"$fuzz_log" 2>&1 &
fuzz_build=$!
trap 'kill -- -$fuzz_build 2>/dev/null || true; rm -f "$setup_env" "$fuzz_log"' EXIT

stage "cargo test"
cargo test --release --locked --workspace "${test_args[@]}"
# The wheels as users install them: `shardsmith` (the binary) and `shardsmith-api` (the
# Python API), built by maturin from the same release build, installed into a fresh venv
# and run from there (tests/wheels.sh).
stage "wheels"
tests/wheels.sh
# Every parser of untrusted bytes, fuzzed for a short bounded time on its seed corpus
# (nightly toolchain; cargo-fuzz pinned and cached under $HOME/.cache/shardsmith). The
# fuzz build has its own flags and toolchain: no wrapper.
stage "fuzzing (waiting for its build)"
# A failed build is rebuilt below, where its errors are printed.
wait "$fuzz_build" || true
cat "$fuzz_log"
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS tests/fuzz/run.sh 20
stage "all passed"
