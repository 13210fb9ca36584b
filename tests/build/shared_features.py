#!/usr/bin/env python3
"""Checks that maturin's builds of the wheels reuse the test build's artefacts.

maturin builds each wheel with `cargo rustc` on one crate (cli, cli/python) alone, so
cargo gives each dependency only the features that crate's own dependency tree asks for.
The suite builds with `cargo test --release --workspace`, where every member's (and every
dev-dependency's) features are unified. Where the two sets differ for a crate, it and
everything above it is built a second time for the wheel (arrow and parquet among them:
minutes on 2 cores). cli/python/Cargo.toml therefore lists, unused by its code, the
dependencies that give the workspace's features. This script compares, for every package
a wheel links, the features of `cargo tree -p CRATE` with those of `cargo tree
--workspace`, and names what differs.

    usage: tests/build/shared_features.py        (exit 0: same; 1: differences, listed)
"""
import re
import subprocess
import sys

LINE = re.compile(r"^(\S+ v\S+)(?: \([^)]*\))?(?: \(\*\))? \[(.*)\]$")


def features(*selection, edges):
    tree = subprocess.run(
        ["cargo", "tree", "--locked", *selection, "-e", edges, "--prefix", "none",
         "--no-dedupe", "-f", "{p} [{f}]"],
        capture_output=True, text=True)
    if tree.returncode != 0:
        sys.exit(f"cargo tree {' '.join(selection)} failed:\n{tree.stderr}")
    out = tree.stdout
    found = {}
    for line in out.splitlines():
        match = LINE.match(line.strip())
        if match:
            found.setdefault(match.group(1), set()).update(f for f in match.group(2).split(",") if f)
    return found


# The crates maturin builds on their own, and the manifest to mend when one drifts.
WHEELS = {"shardsmith-cli": "cli/Cargo.toml", "shardsmith-python": "cli/python/Cargo.toml"}


def main():
    workspace = features("--workspace", edges="normal,build,dev")
    status = 0
    for crate, manifest in WHEELS.items():
        alone = features("-p", crate, edges="normal,build")
        differ = []
        for package in sorted(alone):
            missing = workspace.get(package, set()) - alone[package]
            extra = alone[package] - workspace.get(package, set())
            if missing or extra:
                differ.append(f"  {package}: the workspace build adds {sorted(missing)}"
                              + (f", {crate} alone adds {sorted(extra)}" if extra else ""))
        if differ:
            print(f"{crate}'s dependencies are built with other features than the workspace's,\n"
                  f"so its wheel would build them (and everything above them) again; add to\n"
                  f"{manifest} what gives them the workspace's features:", file=sys.stderr)
            print("\n".join(differ), file=sys.stderr)
            status = 1
        else:
            print(f"{crate}: its {len(alone)} packages have the workspace build's features")
    return status


if __name__ == "__main__":
    sys.exit(main())
