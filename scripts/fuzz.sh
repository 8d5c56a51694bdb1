#!/usr/bin/env bash
# Runs each fuzz target of fuzz/ for a while, starting from the seeds in
# fuzz/seeds/TARGET (read, never written: new inputs go to fuzz/corpus/,
# which git ignores). Run it before a change to the parser, the model or the YAML
# loaders.
#
#   scripts/fuzz.sh [SECONDS [TARGET...]]     (default: 60 s, every target)
#
# Needs cargo-fuzz (installed with `cargo install --locked cargo-fuzz` when
# missing). Its sanitizer flags are unstable: a nightly toolchain is used
# when rustup has one, else the stable one with RUSTC_BOOTSTRAP=1. CI only builds the targets, on stable (.ci/run). A crash is
# saved under fuzz/artifacts/TARGET/ and fails the script; replay it with
# `cargo fuzz run TARGET artifacts/TARGET/crash-…` in fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs=${1:-60}
shift || true
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(check_bytes config rule_pack yaml_budget)
fi

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
else
    fuzz=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz
fi

corpus=corpus
for t in "${targets[@]}"; do
    [ -d "seeds/$t" ] || { echo "no seeds for $t in fuzz/seeds/$t" >&2; exit 2; }
    flags=(-max_total_time="$secs")
    [ -f "$t.dict" ] && flags+=(-dict="$t.dict")
    echo "== $t: $secs s from fuzz/seeds/$t" >&2
    mkdir -p "$corpus/$t"
    "${fuzz[@]}" run "$t" "$corpus/$t" "seeds/$t" -- "${flags[@]}"
done
echo "no crash in ${#targets[@]} target(s), $secs s each" >&2
