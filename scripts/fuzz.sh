#!/usr/bin/env bash
# Runs each fuzz target of fuzz/ for a while, starting from the seeds in
# fuzz/seeds/TARGET (read, never written: new inputs go to a temporary
# corpus). Run it before a change to the parser, the model or the YAML
# loaders.
#
#   scripts/fuzz.sh [SECONDS [TARGET...]]     (default: 60 s, every target)
#
# Needs cargo-fuzz (installed with `cargo install --locked cargo-fuzz` when
# missing) and a nightly toolchain, which cargo-fuzz's sanitizer flags
# require. CI only builds the targets, on stable (.ci/run). A crash is
# saved under fuzz/artifacts/TARGET/ and fails the script; replay it with
# `cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-…`.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs=${1:-60}
shift || true
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(check_bytes config rule_pack yaml_budget)
fi

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "cargo-fuzz needs a nightly toolchain (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz
fi

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
for t in "${targets[@]}"; do
    [ -d "seeds/$t" ] || { echo "no seeds for $t in fuzz/seeds/$t" >&2; exit 2; }
    flags=(-max_total_time="$secs")
    [ -f "$t.dict" ] && flags+=(-dict="$t.dict")
    echo "== $t: $secs s from fuzz/seeds/$t" >&2
    mkdir -p "$corpus/$t"
    cargo +nightly fuzz run "$t" "$corpus/$t" "seeds/$t" -- "${flags[@]}"
done
echo "no crash in ${#targets[@]} target(s), $secs s each" >&2
