#!/usr/bin/env bash
# Runs every fuzz target for a bounded time on a copy of its committed seed corpus
# (tests/fuzz/corpus/<target>), with the limits a parser of untrusted bytes must keep:
# no panic or abort, no input taking more than a second, no allocation over 256 MiB
# (enforced by the targets' allocator; see src/lib.rs), RSS under 2 GiB.
#
#   usage: tests/fuzz/run.sh [SECONDS] [TARGET...]     (default: 20 s, every target)
#          tests/fuzz/run.sh --install                 (cargo-fuzz only; tests/setup.sh)
#          tests/fuzz/run.sh --build                   (install and build only; tests/run_all.sh
#                                                       builds in the background during the tests)
#
# Targets run side by side, one per core (SHARDSMITH_FUZZ_JOBS, default nproc): each is
# one single-threaded process, so on 2 cores 26 targets of 20 s take 4.5 minutes, not 9.
#
# Needs the nightly toolchain (libFuzzer's instrumentation). cargo-fuzz is installed
# once, pinned, under $HOME/.cache/shardsmith. Targets are built once, without a
# sanitizer (the code under test forbids `unsafe`; debug assertions and overflow checks
# stay on). Nothing is written into the repository: the corpus is copied to a scratch
# directory, and what a failing target found is kept under $SHARDSMITH_FUZZ_ARTIFACTS
# (default $HOME/.cache/shardsmith/fuzz-artifacts) and printed as base64 when small.
# Exit 1 when any target fails, naming it and the input.
#
# The mutation sequence is seeded (SHARDSMITH_FUZZ_SEED, default 1), so a run on the same
# code explores the same inputs in the same order: a failure in the test suite is a
# property of the code, not of the day's luck, and reruns reproduce it. Set
# SHARDSMITH_FUZZ_SEED=0 to let libFuzzer pick a seed (long exploratory runs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode=run
case "${1:-}" in
--install) mode=install ;;
--build) mode=build ;;
esac
seconds="${1:-20}"
shift || true
seed="${SHARDSMITH_FUZZ_SEED:-1}"

version=0.13.2
tool_root="$HOME/.cache/shardsmith/cargo-fuzz-$version"
if [ ! -x "$tool_root/bin/cargo-fuzz" ]; then
    echo "== installing cargo-fuzz $version under $tool_root"
    # --debug: the tool only drives cargo, so its own speed does not matter, and a debug
    # build takes 27 s on 2 cores where a release build took 207 s beside the test build.
    cargo install --quiet --locked --debug cargo-fuzz --version "$version" --root "$tool_root"
fi
[ "$mode" = install ] && exit 0
export PATH="$tool_root/bin:$PATH"
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "error: the nightly toolchain is missing (libFuzzer builds need it)" >&2
    exit 1
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' "$here/Cargo.toml" | grep -v '^shardsmith-fuzz$')
fi

# The lock file is committed: refuse to change it (cargo fuzz has no --locked).
cargo +nightly metadata --locked --format-version 1 --manifest-path "$here/Cargo.toml" >/dev/null

work="$(mktemp -d "${TMPDIR:-/tmp}/shardsmith-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== building the fuzz targets"
start=$(date +%s)
if ! cargo +nightly fuzz build --fuzz-dir "$here" --sanitizer none >"$work/build.log" 2>&1; then
    cat "$work/build.log"
    echo "error: the fuzz targets do not build" >&2
    exit 1
fi
echo "   built in $(($(date +%s) - start)) s"
[ "$mode" = build ] && exit 0
bin_dir="$here/target/x86_64-unknown-linux-gnu/release"
keep="${SHARDSMITH_FUZZ_ARTIFACTS:-$HOME/.cache/shardsmith/fuzz-artifacts}"
# fuzz_one TARGET: runs it; its report goes to $work/TARGET.report, and
# $work/TARGET.failed exists when it failed.
fuzz_one() {
    local target=$1
    local corpus="$work/corpus/$target" artifacts="$work/artifacts/$target"
    local tmp="$work/tmp/$target" log="$work/$target.log" report="$work/$target.report"
    mkdir -p "$corpus" "$artifacts" "$tmp"
    if [ -d "$here/corpus/$target" ]; then
        cp -R "$here/corpus/$target/." "$corpus/"
    fi
    local dict=()
    if [ -f "$here/dict/$target.dict" ]; then
        dict=("-dict=$here/dict/$target.dict")
    fi
    local status=0
    # libFuzzer's timeout handler can deadlock (it allocates inside a signal handler):
    # a run that outlives its time by a minute is killed and fails as hung.
    SHARDSMITH_FUZZ_TMP="$tmp" timeout -s KILL "$((seconds * 2 + 60))" \
        "$bin_dir/$target" "$corpus" \
        -max_total_time="$seconds" -timeout=1 -malloc_limit_mb=256 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" -seed="$seed" \
        "${dict[@]}" >"$log" 2>&1 || status=$?
    local execs files kib found
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    files=$(find "$corpus" -type f | wc -l)
    kib=$(($(find "$corpus" -type f -exec cat {} + | wc -c) / 1024))
    found=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | head -1)
    if [ "$status" -ne 0 ] || [ -n "$found" ]; then
        {
            if [ "$status" -eq 137 ]; then
                echo "FAIL $target: hung (killed after $((seconds * 2 + 60)) s); last lines:"
                tail -5 "$log"
            fi
            echo "FAIL $target: exit $status after ${execs:-?} executions"
            grep -E 'panicked|ERROR|allocation limit|SUMMARY|Test unit written' "$log" | head -20 || tail -30 "$log"
            if [ -n "$found" ]; then
                mkdir -p "$keep/$target"
                cp "$found" "$keep/$target/"
                echo "   input: $keep/$target/$(basename "$found") ($(wc -c <"$found") bytes)"
                if [ "$(wc -c <"$found")" -le 8192 ]; then
                    echo "   base64: $(base64 -w0 "$found")"
                fi
                echo "   reproduce: $bin_dir/$target $keep/$target/$(basename "$found")"
            fi
        } >"$report"
        touch "$work/$target.failed"
    else
        printf 'ok   %-14s %10s executions, corpus %4s files (%s KiB)\n' "$target" "${execs:-?}" "$files" "$kib" >"$report"
    fi
    rm -rf "$tmp"
}

jobs=${SHARDSMITH_FUZZ_JOBS:-$(nproc)}
running=0
for target in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$target" &
    running=$((running + 1))
done
wait || true
# The reports in the targets' order, whatever order they finished in.
failed=()
for target in "${targets[@]}"; do
    if [ ! -f "$work/$target.report" ]; then
        echo "FAIL $target: the runner stopped before reporting"
        failed+=("$target")
        continue
    fi
    cat "$work/$target.report"
    if [ -e "$work/$target.failed" ]; then failed+=("$target"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]}"
    exit 1
fi
echo "fuzzing: ${#targets[@]} targets, ${seconds} s each, seed $seed, no failure"
