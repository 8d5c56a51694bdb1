#!/usr/bin/env bash
# Validates lockaudit's SARIF with the SARIF Multitool, with both the SARIF
# rules and GitHub code scanning's ingestion rules (`--rule-kind "Sarif;Gh"`).
#
#   scripts/validate-sarif.sh                  # audit the fixtures, validate the SARIF
#   scripts/validate-sarif.sh out.sarif ...    # validate these files
#
# The Multitool comes from npm (@microsoft/sarif-multitool) and is installed
# once into tools/npm/ (git-ignored). Its exit code is 0 even when it finds
# problems, so this script reads its output log and fails on any result at
# level error or warning. Set SARIF_LEVELS="Error;Warning;Note" to see the
# notes as well (they are printed, never fatal).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

version="${SARIF_MULTITOOL_VERSION:-5.7.0}"
levels="${SARIF_LEVELS:-Error;Warning}"
npm_dir="$root/tools/npm"

case "$(uname -s)" in
  Linux) platform=linux ;;
  Darwin) platform=darwin ;;
  MINGW* | MSYS* | CYGWIN*) platform=win32 ;;
  *) echo "validate-sarif: unsupported platform $(uname -s)" >&2; exit 2 ;;
esac
multitool="$npm_dir/node_modules/@microsoft/sarif-multitool-$platform/Sarif.Multitool"
[ "$platform" = win32 ] && multitool="$multitool.exe"

if [ ! -f "$multitool" ]; then
  echo "validate-sarif: installing @microsoft/sarif-multitool@$version into tools/npm" >&2
  npm install --prefix "$npm_dir" --no-save --no-audit --no-fund \
    "@microsoft/sarif-multitool@$version" >&2
fi
# npm may skip the package's postinstall script, which only sets this bit.
chmod u+x "$multitool"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

inputs=()
if [ "$#" -gt 0 ]; then
  for f in "$@"; do
    inputs+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
  done
else
  cargo build --quiet
  bin="${CARGO_TARGET_DIR:-$root/target}/debug/lockaudit"
  # Exit code 1 only means "findings"; 2 is a real failure.
  audit() {
    local dir="$1" out="$2"
    shift 2
    local code=0
    (cd "$dir" && "$bin" check --format sarif --output "$out" "$@") || code=$?
    if [ "$code" -gt 1 ]; then
      echo "validate-sarif: lockaudit failed in $dir (exit $code)" >&2
      exit 2
    fi
    inputs+=("$out")
  }
  audit fixtures/projects/mixed "$work/mixed.sarif" .
  audit "$root" "$work/fixtures.sarif" fixtures
  audit fixtures/projects/annotated "$work/clean.sarif" .
  # Results with suggested fixes (`fixes[].artifactChanges`).
  audit fixtures/projects/fixable "$work/fixes.sarif" .
  if ! grep -q '"artifactChanges"' "$work/fixes.sarif"; then
    echo "validate-sarif: no result with a fix in fixtures/projects/fixable" >&2
    exit 2
  fi
fi

failed=0
for f in "${inputs[@]}"; do
  log="$work/$(basename "$f").validation.sarif"
  "$multitool" validate "$f" --output "$log" --log ForceOverwrite \
    --rule-kind "Sarif;Gh" --level "$levels" --quiet >/dev/null
  # One result per problem; a result without a level is a warning.
  if ! node - "$log" "$f" <<'EOF'
const fs = require("fs");
const [log, input] = process.argv.slice(2);
const run = JSON.parse(fs.readFileSync(log, "utf8")).runs[0];
const results = run.results || [];
let fatal = 0;
for (const r of results) {
  const level = r.level || "warning";
  if (level === "error" || level === "warning") fatal++;
  const rule = (run.tool.driver.rules || []).find((x) => x.id === r.ruleId);
  const template = rule && rule.messageStrings && r.message.id
    ? rule.messageStrings[r.message.id].text
    : r.message.text || "";
  const args = (r.message && r.message.arguments) || [];
  const text = template.replace(/\{(\d+)\}/g, (_, i) => args[Number(i)] ?? "");
  console.log(`${input}: ${level} ${r.ruleId}: ${text}`);
}
for (const n of (run.invocations || []).flatMap((i) => i.toolExecutionNotifications || [])) {
  if ((n.level || "warning") !== "note") fatal++;
  console.log(`${input}: ${n.level || "warning"} (tool): ${n.message && n.message.text}`);
}
console.log(`${input}: ${results.length} result(s), ${fatal} error(s) or warning(s)`);
process.exit(fatal ? 1 : 0);
EOF
  then
    failed=1
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "validate-sarif: FAILED" >&2
  exit 1
fi
echo "validate-sarif: ok (${#inputs[@]} file(s), rule kinds Sarif;Gh, levels $levels)"
