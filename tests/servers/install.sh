#!/usr/bin/env bash
# Installs a server the tests start on 127.0.0.1, cached under $HOME/.cache/shardsmith
# keyed by name and version, and prints the path of its binary.
#
#   usage: tests/servers/install.sh s3s-fs
set -euo pipefail
S3S_FS_VERSION=0.14.1
AZURITE_VERSION=3.35.0
cache="$HOME/.cache/shardsmith/servers"
case "${1:-}" in
s3s-fs)
    root="$cache/s3s-fs-$S3S_FS_VERSION"
    if [ ! -x "$root/bin/s3s-fs" ]; then
        rm -rf "$root"
        # Its own target directory: the workspace's build cache stays the workspace's.
        cargo install --quiet --locked s3s-fs --version "$S3S_FS_VERSION" \
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
*)
    echo "usage: $0 s3s-fs|azurite" >&2
    exit 2
    ;;
esac
