#!/usr/bin/env bash
# The benchmark: `lockaudit check` on a corpus, paired with the parse floor
# (../shared/synfloor: walk + read + syn::parse_file with span locations,
# on the same threads, system allocator, span map freed per file). The
# floor and lockaudit run alternately (A B A B …, RUNS rounds) in one
# session, so both see the same machine; CPU seconds (user + sys) and wall
# seconds are the medians, peak RSS the largest, all from /usr/bin/time.
# Then: the files the pre-filter lets through (floor and lockaudit on just
# those), time on the corpus 1x, 2x and 4x, and --jobs 1 against --jobs N.
#
#   scripts/bench.sh [CORPUS]      (default: /tmp/lock-corpus)
#   scripts/bench.sh /tmp/app-corpus
#
# A missing /tmp/lock-corpus is built with `cargo vendor` from the pinned
# manifest in ../shared/bench-corpus (that needs the crate registry); the
# application corpus is built by ../shared/app-corpus/make-app-corpus.sh
# from snapshots of the repositories it names. Environment: RUNS (default
# 3), JOBS (default: all cores), WORST=1 to end with `floor worst` (the
# files that cost most per parse millisecond and the most heap; that mode
# counts allocations, so it is never the floor). SYNFLOOR_DIR overrides where
# the floor's sources are (default ../shared/synfloor).
set -euo pipefail
cd "$(dirname "$0")/.."

CORPUS=${1:-/tmp/lock-corpus}
RUNS=${RUNS:-3}
JOBS=${JOBS:-$(nproc)}
MANIFEST=../shared/bench-corpus/Cargo.toml

if [ ! -d "$CORPUS" ] && [ "$CORPUS" != /tmp/lock-corpus ]; then
    echo "no corpus at $CORPUS: build the application corpus with ../shared/app-corpus/make-app-corpus.sh (see its README)" >&2
    exit 2
fi
if [ ! -d "$CORPUS" ]; then
    echo "building the corpus in $CORPUS (cargo vendor of $MANIFEST)" >&2
    cargo vendor --locked --versioned-dirs --manifest-path "$MANIFEST" "$CORPUS" >/dev/null
fi
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 2; }

SYNFLOOR_DIR=${SYNFLOOR_DIR:-../shared/synfloor}
[ -f "$SYNFLOOR_DIR/Cargo.toml" ] || { echo "needs the parse floor in $SYNFLOOR_DIR" >&2; exit 2; }
cargo build --profile profiling --quiet --bin lockaudit --example floor
# shared/ is read-only: the floor builds into this tree's target/.
cargo build --release --quiet --manifest-path "$SYNFLOOR_DIR/Cargo.toml" --target-dir target/synfloor
BIN=target/profiling/lockaudit
FLOOR=target/profiling/examples/floor
SYNFLOOR=target/synfloor/release/synfloor
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# once NAME CMD...: one timed run, appended to NAME's samples.
once() {
    local name=$1
    shift
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" >/dev/null 2>"$WORK/stderr" || {
        local code=$?
        # lockaudit exits 1 when it has findings; anything else is a failure.
        if [ "$code" -ne 1 ] || [[ $1 != "$BIN" ]]; then
            cat "$WORK/stderr" >&2
            exit "$code"
        fi
    }
    read -r w u s m <"$WORK/time"
    echo "$w" >>"$WORK/$name.wall"
    awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$WORK/$name.cpu"
    echo "$m" >>"$WORK/$name.rss"
}
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() { median "$WORK/$1.wall"; }
cpu() { median "$WORK/$1.cpu"; }
rss() { sort -n "$WORK/$1.rss" | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

export SYNFLOOR_INVALIDATE=1
"$SYNFLOOR" read "$CORPUS" "$JOBS" >"$WORK/size"
FILES=$(sed -E 's/.* files=([0-9]+).*/\1/' "$WORK/size")
MBYTES=$(sed -E 's/.* bytes=([0-9]+).*/\1/' "$WORK/size" | awk '{ printf "%.0f", $1 / 1048576 }')
LINES=$(sed -E 's/.* lines=([0-9]+).*/\1/' "$WORK/size")

CHECK=("$BIN" check --fail-on never --format json --jobs "$JOBS")
# Paired rounds: floor, lockaudit, lockaudit without the pre-filter.
for _ in $(seq "$RUNS"); do
    once floor "$SYNFLOOR" parse "$CORPUS" "$JOBS"
    once check "${CHECK[@]}" "$CORPUS"
    once nopre "${CHECK[@]}" --no-prefilter "$CORPUS"
done

# Only the files the pre-filter lets through (hard links in a tree of
# their own): what a parsed file costs against its parse.
"$FLOOR" admitted "$CORPUS" >"$WORK/admitted" 2>"$WORK/admitted.note"
ADMITTED=$(wc -l <"$WORK/admitted")
i=0
while IFS= read -r f; do
    i=$((i + 1))
    mkdir -p "$WORK/admitted.d/$i"
    ln "$f" "$WORK/admitted.d/$i/" 2>/dev/null || cp "$f" "$WORK/admitted.d/$i/"
done <"$WORK/admitted"
mkdir -p "$WORK/admitted.d"
for _ in $(seq "$RUNS"); do
    once floor_admitted "$SYNFLOOR" parse "$WORK/admitted.d" "$JOBS"
    once check_admitted "${CHECK[@]}" --no-prefilter "$WORK/admitted.d"
done

# Linearity: the corpus once, twice and four times (copies made of hard
# links, so they cost no disk), audited in one run each.
for k in 2 3 4; do
    cp -al "$CORPUS" "$WORK/copy$k" 2>/dev/null || cp -r "$CORPUS" "$WORK/copy$k"
done
once x1 "${CHECK[@]}" "$CORPUS"
once x2 "${CHECK[@]}" "$CORPUS" "$WORK/copy2"
once x4 "${CHECK[@]}" "$CORPUS" "$WORK/copy2" "$WORK/copy3" "$WORK/copy4"
once jobs1 "$BIN" check --fail-on never --format json --jobs 1 "$CORPUS"

CORES=$(nproc)
echo
echo "lockaudit benchmark: $FILES files, $MBYTES MB, $LINES lines of Rust in $CORPUS"
echo "$CORES cores, --jobs $JOBS, $RUNS paired rounds (floor, check, check --no-prefilter), medians, $(date -u +%Y-%m-%d)"
echo
echo "| run | CPU (s) | wall (s) | peak RSS (MB) | CPU vs floor | wall vs floor | RSS vs floor |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row() {
    local label=$1 name=$2 base=$3
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$(cpu "$name")" "$(wall "$name")" \
        "$(mb "$(rss "$name")")" "$(ratio "$(cpu "$name")" "$(cpu "$base")")" \
        "$(ratio "$(wall "$name")" "$(wall "$base")")" "$(ratio "$(rss "$name")" "$(rss "$base")")"
}
row "parse floor (synfloor)" floor floor
row "**lockaudit check**" check floor
row "lockaudit check --no-prefilter" nopre floor
row "parse floor, admitted files only" floor_admitted floor_admitted
row "lockaudit, admitted files only" check_admitted floor_admitted
echo
echo "Pre-filter: $(cat "$WORK/admitted.note") ($ADMITTED files)."
echo "The floor's CPU is $(ratio "$(cpu floor)" "$(wall floor)")x its wall time on $JOBS threads (about $JOBS when it scales)."
echo
echo "| corpus | MB | wall (s) | CPU (s) | ms CPU per MB |"
echo "|---|---:|---:|---:|---:|"
for q in 1 2 4; do
    m=$(awk -v m="$MBYTES" -v q="$q" 'BEGIN {print m * q}')
    printf '| %sx | %s | %s | %s | %.1f |\n' "$q" "$m" "$(wall "x$q")" "$(cpu "x$q")" \
        "$(awk -v c="$(cpu "x$q")" -v m="$m" 'BEGIN {print c * 1000 / m}')"
done
echo
echo "--jobs 1: $(wall jobs1) s wall; --jobs $JOBS: $(wall check) s ($(ratio "$(wall jobs1)" "$(wall check)")x faster)."

if [ "${WORST:-0}" = 1 ]; then
    echo
    echo "Costliest files (\`floor worst\`, one thread, no pre-filter):"
    echo
    "$FLOOR" worst "$CORPUS"
fi
