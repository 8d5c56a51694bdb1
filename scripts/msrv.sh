#!/usr/bin/env bash
# Checks that lockaudit builds with its minimum supported Rust version, the
# `rust-version` of Cargo.toml.
#
# The committed Cargo.lock pins the newest dependency versions, some of
# which need a newer Rust, so this script resolves a lock file for the
# minimum in a copy of the sources (cargo's Rust-version-aware resolver),
# pins the few crates whose newer releases do not declare the Rust they
# need, and runs `cargo +<msrv> check --locked` on the library and the
# binaries. Needs the toolchain: `rustup toolchain install <msrv>
# --profile minimal`. Usage: scripts/msrv.sh [TARGET_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$msrv" ] || { echo "Cargo.toml has no rust-version" >&2; exit 2; }
# `1.95` or its first release `1.95.0`, whichever is installed.
toolchain=
for t in "$msrv" "$msrv.0"; do
    if rustup run "$t" rustc --version >/dev/null 2>&1; then toolchain=$t; break; fi
done
if [ -z "$toolchain" ]; then
    echo "the Rust $msrv toolchain is not installed: rustup toolchain install $msrv --profile minimal" >&2
    exit 2
fi

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$copy"
target=${1:-$PWD/target/msrv}

cd "$copy"
CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo update --quiet
# Releases that need a newer Rust than their `rust-version` says (let
# chains, stable in 1.88), so the resolver cannot tell.
for pin in comfy-table@7.1.4 ignore@0.4.23; do
    cargo update --quiet -p "${pin%@*}" --precise "${pin#*@}"
done
cargo "+$toolchain" check --locked --lib --bins --target-dir "$target"
echo "lockaudit builds with Rust $msrv"
