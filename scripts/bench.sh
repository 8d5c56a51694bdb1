#!/usr/bin/env bash
# The benchmark: `lockaudit check` on the whole pinned corpus next to two
# floors measured in the same run by examples/floor.rs:
#   (a) walk + read every .rs file,
#   (b) walk + read + syn::parse_file, on the same threads.
# Then: lockaudit and (b) on just the files the pre-filter lets through,
# time on the corpus 1x, 2x and 4x (copies), and --jobs 1 against all
# cores. Wall time is the median of RUNS runs, peak RSS the largest, both
# from /usr/bin/time.
#
#   scripts/bench.sh [CORPUS]      (default: /tmp/lock-corpus)
#   scripts/bench.sh /tmp/app-corpus
#
# A missing /tmp/lock-corpus is built with `cargo vendor` from the pinned
# manifest in ../shared/bench-corpus (that needs the crate registry); the
# application corpus is built by ../shared/app-corpus/make-app-corpus.sh
# from snapshots of the repositories it names. Environment: RUNS (default
# 3), JOBS (default: all cores), WORST=1 to end with `floor worst`: the
# files that cost most per parse millisecond and the most heap.
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

cargo build --profile profiling --quiet --bin lockaudit --example floor
BIN=target/profiling/lockaudit
FLOOR=target/profiling/examples/floor
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# measure NAME CMD...: sets WALL_<NAME> (median seconds) and RSS_<NAME> (max KB).
measure() {
    local name=$1
    shift
    local walls=() rss=0
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >/dev/null 2>"$WORK/stderr" || {
            local code=$?
            # lockaudit exits 1 when it has findings; anything else is a failure.
            if [ "$code" -ne 1 ] || [[ $1 != "$BIN" ]]; then
                cat "$WORK/stderr" >&2
                exit "$code"
            fi
        }
        read -r w m <"$WORK/time"
        walls+=("$w")
        if ((m > rss)); then rss=$m; fi
    done
    local median
    median=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf -v "WALL_$name" '%s' "$median"
    printf -v "RSS_$name" '%s' "$rss"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

# Corpus size, from the read floor.
"$FLOOR" read --jobs "$JOBS" "$CORPUS" 2>"$WORK/size"
FILES=$(awk '{print $2}' "$WORK/size")
MBYTES=$(awk '{print $4}' "$WORK/size")
LINES=$(find "$CORPUS" -name '*.rs' -type f -print0 | xargs -0 cat | wc -l)

CHECK=("$BIN" check --fail-on never --format json --jobs "$JOBS")
measure read "$FLOOR" read --jobs "$JOBS" "$CORPUS"
measure parse "$FLOOR" parse --jobs "$JOBS" "$CORPUS"
measure check "${CHECK[@]}" "$CORPUS"

# Only the files the pre-filter lets through: what a parsed file costs.
"$FLOOR" admitted "$CORPUS" >"$WORK/admitted" 2>"$WORK/admitted.note"
ADMITTED=$(wc -l <"$WORK/admitted")
mapfile -t ADMITTED_FILES <"$WORK/admitted"
measure parse_admitted "$FLOOR" parse --jobs "$JOBS" --files "$WORK/admitted"
measure check_admitted "${CHECK[@]}" --no-prefilter "${ADMITTED_FILES[@]}"
measure check_all_parsed "${CHECK[@]}" --no-prefilter "$CORPUS"

# Linearity: the corpus once, twice and four times (copies made of hard
# links, so they cost no disk), audited in one run each.
for k in 2 3 4; do
    cp -al "$CORPUS" "$WORK/copy$k" 2>/dev/null || cp -r "$CORPUS" "$WORK/copy$k"
done
measure x1 "${CHECK[@]}" "$CORPUS"
measure x2 "${CHECK[@]}" "$CORPUS" "$WORK/copy2"
measure x4 "${CHECK[@]}" "$CORPUS" "$WORK/copy2" "$WORK/copy3" "$WORK/copy4"

measure jobs1 "$BIN" check --fail-on never --format json --jobs 1 "$CORPUS"

CORES=$(nproc)
echo
echo "lockaudit benchmark: $FILES files, $MBYTES MB, $LINES lines of Rust in $CORPUS"
echo "$CORES cores, --jobs $JOBS, median of $RUNS runs, $(date -u +%Y-%m-%d)"
echo
echo "| run | wall (s) | files/s | MB/s | peak RSS (MB) | vs (a) read | vs (b) parse |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row() {
    local label=$1 wall=$2 rss=$3
    printf '| %s | %s | %.0f | %.1f | %s | %s | %s |\n' "$label" "$wall" \
        "$(awk -v f="$FILES" -v w="$wall" 'BEGIN {print f / w}')" \
        "$(awk -v m="$MBYTES" -v w="$wall" 'BEGIN {print m / w}')" \
        "$(mb "$rss")" "$(ratio "$wall" "$WALL_read")" "$(ratio "$wall" "$WALL_parse")"
}
row "(a) walk + read" "$WALL_read" "$RSS_read"
row "(b) walk + read + syn parse" "$WALL_parse" "$RSS_parse"
row "**lockaudit check**" "$WALL_check" "$RSS_check"
row "lockaudit check --no-prefilter" "$WALL_check_all_parsed" "$RSS_check_all_parsed"
echo
echo "Pre-filter: $(cat "$WORK/admitted.note"). On those files alone:"
echo "parse floor $WALL_parse_admitted s, lockaudit $WALL_check_admitted s:" \
    "$(ratio "$WALL_check_admitted" "$WALL_parse_admitted")x the parse cost."
echo "Without the pre-filter, the whole corpus: $(ratio "$WALL_check_all_parsed" "$WALL_parse")x the parse floor."
echo
echo "| corpus | MB | wall (s) | ms per MB |"
echo "|---|---:|---:|---:|"
for q in 1 2 4; do
    w=WALL_x$q
    m=$(awk -v m="$MBYTES" -v q="$q" 'BEGIN {print m * q}')
    printf '| %sx | %s | %s | %.1f |\n' "$q" "$m" "${!w}" \
        "$(awk -v w="${!w}" -v m="$m" 'BEGIN {print w * 1000 / m}')"
done
echo
echo "--jobs 1: $WALL_jobs1 s; --jobs $JOBS: $WALL_check s ($(ratio "$WALL_jobs1" "$WALL_check")x faster)."

if [ "${WORST:-0}" = 1 ]; then
    echo
    echo "Costliest files (\`floor worst\`, one thread, no pre-filter):"
    echo
    "$FLOOR" worst "$CORPUS"
fi
